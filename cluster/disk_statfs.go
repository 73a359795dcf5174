//go:build linux || darwin

package cluster

import "syscall"

// freeSpace is the space an unprivileged process may still use on the
// file system that holds dir.
func freeSpace(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
