package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// maxRequestFrame caps each gob message a peer sends to this node's RPC
// server or apply stream. A request carries one HTTP request, whose body
// the API caps at 3 MiB, or one log command made from such a body; gob
// itself would take a message of up to 8 GiB, growing its buffer as the
// bytes arrive.
//
// Answers, read by the node that dialled, are not capped, nor is Raft's
// msgpack: those come from a peer whose certificate was verified, and with
// peer TLS no stranger gets a byte to a decoder. Without it, the cap is all
// there is.
const maxRequestFrame = 16 << 20

// errFrameTooLarge is a message above maxRequestFrame: the connection is
// closed.
var errFrameTooLarge = errors.New("peer message exceeds the size limit")

// frameLimit passes a gob stream through and fails at the length prefix of
// any message longer than max, before gob reads it. A gob stream is a
// sequence of messages, each an unsigned count then that many bytes; the
// count is one byte below 128, else a byte holding the negated length of a
// big-endian number that follows.
type frameLimit struct {
	r    *bufio.Reader
	max  uint64
	left int // bytes of the current message, count included, not yet read
}

func newFrameLimit(r *bufio.Reader, max uint64) *frameLimit {
	return &frameLimit{r: r, max: max}
}

// next reads the count of the next message when the current one is done.
func (l *frameLimit) next() error {
	if l.left > 0 {
		return nil
	}
	b, err := l.r.Peek(1)
	if err != nil {
		return err
	}
	n, size := uint64(b[0]), 1
	if b[0] >= 0x80 {
		k := -int(int8(b[0]))
		if k < 1 || k > 8 {
			return fmt.Errorf("%w: bad message length", errFrameTooLarge)
		}
		size += k
		h, err := l.r.Peek(size)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		n = 0
		for _, c := range h[1:] {
			n = n<<8 | uint64(c)
		}
	}
	if n > l.max {
		return fmt.Errorf("%w: a message of %d bytes (limit %d)", errFrameTooLarge, n, l.max)
	}
	l.left = size + int(n)
	return nil
}

func (l *frameLimit) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := l.next(); err != nil {
		return 0, err
	}
	if len(p) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= n
	return n, err
}

// ReadByte makes frameLimit an io.ByteReader, which gob reads counts with
// (and wraps any other reader in a bufio.Reader of its own).
func (l *frameLimit) ReadByte() (byte, error) {
	if err := l.next(); err != nil {
		return 0, err
	}
	b, err := l.r.ReadByte()
	if err == nil {
		l.left--
	}
	return b, err
}
