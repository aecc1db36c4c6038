package haproxy

import (
	"bytes"
	"errors"
	"io"
	"time"
)

// promptSep ends every answer in prompt mode: the output (possibly empty)
// is followed by a newline and the "> " prompt.
var promptSep = []byte("\n> ")

// answerReader splits the byte stream of a prompt-mode session into answers.
type answerReader struct {
	r          io.Reader
	buf        []byte
	start, end int
	// pace, when set, is waited before each read: HAProxy sends the
	// answers of a large batch a few bytes at a time as it works through
	// it, and reading each as it comes would wake the controller thousands
	// of times, taking CPU from HAProxy while it applies the batch.
	pace time.Duration
}

func newAnswerReader(r io.Reader) *answerReader {
	return &answerReader{r: r, buf: make([]byte, 64<<10)}
}

// next returns the next answer, trimmed, without its prompt.
func (a *answerReader) next() (string, error) {
	scan := a.start
	for {
		if i := bytes.Index(a.buf[scan:a.end], promptSep); i >= 0 {
			j := scan + i
			text := string(bytes.TrimSpace(a.buf[a.start:j]))
			a.start = j + len(promptSep)
			if a.start == a.end {
				a.start, a.end = 0, 0
			}
			return text, nil
		}
		// The separator may straddle the next read.
		scan = max(a.start, a.end-len(promptSep)+1)
		if a.end == len(a.buf) {
			if a.start > 0 {
				n := copy(a.buf, a.buf[a.start:a.end])
				scan -= a.start
				a.start, a.end = 0, n
			}
			if a.end > len(a.buf)/2 {
				nb := make([]byte, 2*len(a.buf))
				copy(nb, a.buf[:a.end])
				a.buf = nb
			}
		}
		if a.pace > 0 {
			time.Sleep(a.pace)
		}
		n, err := a.r.Read(a.buf[a.end:])
		a.end += n
		if err != nil && n == 0 {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
	}
}
