package state

import (
	"errors"
	"fmt"
)

// ErrorCode says why a write was refused.
type ErrorCode int

const (
	// NotFound: the object does not exist.
	NotFound ErrorCode = iota + 1
	// AlreadyExists: a create found the key taken.
	AlreadyExists
	// Conflict: the expected resourceVersion is not the stored one.
	Conflict
	// UIDMismatch: the expected uid is not the stored one.
	UIDMismatch
)

func (c ErrorCode) String() string {
	switch c {
	case NotFound:
		return "not found"
	case AlreadyExists:
		return "already exists"
	case Conflict:
		return "resource version conflict"
	case UIDMismatch:
		return "uid mismatch"
	}
	return fmt.Sprintf("code %d", int(c))
}

// Error is a write refused by the state; these are business outcomes of
// Apply, the same on every node, not failures.
type Error struct {
	Code ErrorCode
	Key  Key
	// RV and UID are the stored object's, when there is one.
	RV  uint64
	UID string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (stored rv %d)", e.Key, e.Code, e.RV)
}

// Code returns err's ErrorCode, or 0 if err is not an *Error.
func Code(err error) ErrorCode {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}
