package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BuildTimeout bounds the go build of all binaries in Main.
const BuildTimeout = 5 * time.Minute

// Binaries are the repository's commands built once for a test binary.
type Binaries struct {
	Root string // the repository root, the directory holding go.mod
	Dir  string // the temporary directory the binaries are in
}

// Path is the binary of the command ./cmd/name.
func (b *Binaries) Path(name string) string {
	return filepath.Join(b.Dir, name)
}

// Main is the body of a TestMain: it builds ./cmd/NAME for each of names
// into a new temporary directory (within BuildTimeout), fills in bins, runs
// the tests and removes the binaries. It returns the exit code for os.Exit;
// a failed build is printed on stderr and fails the run.
func Main(m *testing.M, bins *Binaries, names ...string) int {
	prog := filepath.Base(os.Args[0])
	root, err := RepoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "leasehold-test-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bins = Binaries{Root: root, Dir: dir}
	ctx, cancel := context.WithTimeout(context.Background(), BuildTimeout)
	defer cancel()
	if err := bins.build(ctx, names...); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
		return 1
	}
	return m.Run()
}

func (b *Binaries) build(ctx context.Context, names ...string) error {
	for _, name := range names {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.Path(name), "./cmd/"+name)
		cmd.Dir = b.Root
		if out, err := cmd.CombinedOutput(); err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("%v (not done within %v)", err, BuildTimeout)
			}
			return fmt.Errorf("go build ./cmd/%s in %s: %v\n%s", name, b.Root, err, out)
		}
	}
	return nil
}

// RepoRoot walks up from the working directory to go.mod, falling back to
// `go env GOMOD`.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("no go.mod above %s and go env GOMOD failed: %v", dir, err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("no go.mod above %s", dir)
	}
	return filepath.Dir(gomod), nil
}
