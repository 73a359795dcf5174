//go:build !linux && !darwin

package cluster

import "errors"

// freeSpace is unknown here: only a failed write tells the disk is full.
func freeSpace(string) (uint64, error) { return 0, errors.New("free space unknown on this system") }
