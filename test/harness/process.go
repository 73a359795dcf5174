package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// KillWait bounds how long Kill waits for a process to be gone after
// SIGKILL.
const KillWait = 10 * time.Second

// Command is a binary to start and where.
type Command struct {
	Bin  string
	Args []string
	Env  []string // the whole environment: see CleanEnv
	Dir  string   // the working directory
	Log  string   // the file stdout and stderr are appended to
}

// Process is one run of a binary, in its own process group, so that a
// signal reaches whatever it started too.
type Process struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when it has exited and was reaped
	state   *os.ProcessState
	waitErr error
}

// Start starts c.Bin in its own process group, its stdout and stderr
// appended to c.Log after a line saying when and what started.
func Start(c Command) (*Process, error) {
	logf, err := os.OpenFile(c.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child holds its own descriptor
	fmt.Fprintf(logf, "=== %s %s: starting %s %s\n", time.Now().Format(time.RFC3339Nano),
		filepath.Base(os.Args[0]), c.Bin, strings.Join(c.Args, " "))
	cmd := exec.Command(c.Bin, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's id, and its process group's.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and was reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Running reports whether the process (not nil) has not exited yet.
func (p *Process) Running() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// State is how the process exited; nil while it runs.
func (p *Process) State() *os.ProcessState {
	if p.Running() {
		return nil
	}
	return p.state
}

// Status describes the process for a message: "never started" (nil),
// "running", or how it exited.
func (p *Process) Status() string {
	switch {
	case p == nil:
		return "never started"
	case p.Running():
		return "running"
	case p.state != nil:
		return p.state.String()
	}
	return fmt.Sprint(p.waitErr)
}

// Signal sends sig to the process group.
func (p *Process) Signal(sig syscall.Signal) error {
	if p == nil {
		return errors.New("never started")
	}
	return syscall.Kill(-p.Pid(), sig)
}

// Pause stops the process group with SIGSTOP.
func (p *Process) Pause() error { return p.Signal(syscall.SIGSTOP) }

// Resume continues the process group with SIGCONT.
func (p *Process) Resume() error { return p.Signal(syscall.SIGCONT) }

// Kill sends SIGKILL to the process group and waits until the process is
// reaped, for at most KillWait. A process that is not running is left
// alone.
func (p *Process) Kill() error {
	if !p.Running() {
		return nil
	}
	if err := p.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGKILL pid %d: %v", p.Pid(), err)
	}
	return p.Wait(KillWait)
}

// Wait waits until the process has exited, for at most timeout.
func (p *Process) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("pid %d still running after %v", p.Pid(), timeout)
	}
}

// Stop sends SIGTERM to the process (not its group: that is what a service
// manager sends) and waits until it has exited, for at most timeout; it
// returns how long that took. A process still there then is killed (Kill)
// and Stop returns an error. A process that is not running is left alone.
func (p *Process) Stop(timeout time.Duration) (time.Duration, error) {
	if !p.Running() {
		return 0, nil
	}
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return 0, fmt.Errorf("SIGTERM pid %d: %v", p.Pid(), err)
	}
	if err := p.Wait(timeout); err != nil {
		_ = p.Kill()
		return time.Since(start), fmt.Errorf("pid %d did not exit within %v of SIGTERM", p.Pid(), timeout)
	}
	return time.Since(start), nil
}

// Node is a member started again and again with the same data (a restart,
// an upgrade): it holds its latest Process, for concurrent use. The zero
// value is a node never started.
type Node struct {
	mu   sync.Mutex
	proc *Process
}

// Start starts c as the node's new Process, unless one still runs.
func (n *Node) Start(c Command) (*Process, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc.Running() {
		return nil, fmt.Errorf("already running as pid %d", n.proc.Pid())
	}
	p, err := Start(c)
	if err != nil {
		return nil, err
	}
	n.proc = p
	return p, nil
}

// Process is the node's latest Process: the running one, or the last to
// exit; nil before the first Start.
func (n *Node) Process() *Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

// Running reports whether the node's latest Process runs.
func (n *Node) Running() bool { return n.Process().Running() }
