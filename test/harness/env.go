package harness

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
)

// CleanEnv is the test's environment without any LEASEHOLD_* variable, so
// that a developer's settings do not leak into the nodes; extra is appended.
func CleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEASEHOLD_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// FreePorts picks n distinct loopback ports that can be listened on now,
// at random in 20000–32000: below Linux's ephemeral ports (32768 and up),
// so that no outgoing connection (chaos's proxies open many) takes one as
// its source port between the pick and the node's listen, or while a
// killed node is down. (Ports of :0 are ephemeral ones: a chaos run failed
// once when its node's port was taken between the two.)
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 10000 {
			t.Fatal("no free loopback ports in 20000–32000")
		}
		p := 20000 + rand.IntN(12000)
		if !slices.Contains(ports, p) && PortFree(p) {
			ports = append(ports, p)
		}
	}
	return ports
}

// PortFree reports whether 127.0.0.1:port can be listened on right now.
func PortFree(port int) bool {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// Tail returns the last n lines of the file at path, or why it cannot.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
