package haproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
)

// Commands with a payload (`set ssl cert FILE <<`, `add ssl crt-list
// LIST <<`): the command line ends with " <<", the payload's lines
// follow, and an empty line ends it. So a payload must hold no empty
// line (HAProxy would take the rest for commands), and the command with
// its payload must fit HAProxy's buffer (tune.bufsize). In prompt mode
// HAProxy answers each payload line with a "+ " prompt before the
// command's answer.

// Command is one Runtime API command, with a payload or none.
type Command struct {
	Line    string
	Payload []byte // nil: a plain command
}

// MaxPayload bounds a command with its payload: HAProxy's default
// tune.bufsize (16 kB) less room for the framing.
const MaxPayload = 15 << 10

// ErrPayload: a payload HAProxy would misread (an empty line, a CR) or
// that does not fit its buffer. Nothing was sent.
var ErrPayload = errors.New("invalid runtime API payload")

// ExecCommands sends cmds pipelined, in order, each on a line of its own
// (a payload after its command), and returns one answer per command
// (prompts and "+ " payload prompts stripped), checked as ExecChecked
// does.
func (r *Runtime) ExecCommands(ctx context.Context, cmds []Command) ([]string, error) {
	lines := make([]string, len(cmds))
	var buf bytes.Buffer
	for i, c := range cmds {
		lines[i] = c.Line
		if err := validPayload(c); err != nil {
			return nil, fmt.Errorf("%w: command %d %q: %w", ErrPayload, i, c.Line, err)
		}
		buf.WriteString(c.Line)
		if c.Payload != nil {
			buf.WriteString(" <<\n")
			buf.Write(bytes.TrimRight(c.Payload, "\n"))
			buf.WriteString("\n")
		}
		buf.WriteString("\n")
	}
	payload := buf.Bytes()
	ans, err := r.exec(ctx, lines, func() ([]Answer, error) {
		a, err := r.roundTripBytes(ctx, payload, len(cmds))
		for i := range a {
			a[i] = parseAnswer(stripPayloadPrompts(a[i].Text))
		}
		return a, err
	})
	if err != nil {
		return nil, err
	}
	return checkAnswers(lines, ans)
}

// validPayload checks what HAProxy would misread in a command's payload.
func validPayload(c Command) error {
	if c.Payload == nil {
		return nil
	}
	p := bytes.TrimRight(c.Payload, "\n")
	switch {
	case len(p) == 0:
		return errors.New("empty payload")
	case len(c.Line)+len(p) > MaxPayload:
		return fmt.Errorf("%d bytes, at most %d", len(c.Line)+len(p), MaxPayload)
	case bytes.ContainsRune(p, '\r'):
		return errors.New("payload contains a CR")
	case bytes.Contains(p, []byte("\n\n")) || p[0] == '\n':
		return errors.New("payload contains an empty line")
	case strings.HasSuffix(c.Line, "<<"):
		return errors.New("the command line carries its own <<")
	}
	return nil
}

// stripPayloadPrompts removes the "+ " prompts HAProxy wrote for each
// payload line before the answer.
func stripPayloadPrompts(text string) string {
	for strings.HasPrefix(text, "+ ") {
		text = text[2:]
	}
	return strings.TrimPrefix(text, "+")
}
