package announce

import "context"

// Latest is a mailbox of one: Put never blocks and replaces a value not
// yet taken, so the taker sees the newest (an announcer's Set).
type Latest[T any] struct{ c chan T }

// NewLatest makes an empty mailbox.
func NewLatest[T any]() Latest[T] { return Latest[T]{c: make(chan T, 1)} }

// Put leaves v, dropping a value not yet taken.
func (l Latest[T]) Put(v T) {
	for {
		select {
		case l.c <- v:
			return
		default:
		}
		select {
		case <-l.c:
		default:
		}
	}
}

// C is where the values are taken.
func (l Latest[T]) C() <-chan T { return l.c }

// Asks is how a caller asks a running loop for a value: the loop takes
// each channel from it and answers on it (the announcers' Holds and
// Announced).
type Asks[T any] chan chan T

// Ask waits for the loop's answer; the zero value when ctx ends first
// (the loop has ended).
func (q Asks[T]) Ask(ctx context.Context) T {
	c := make(chan T, 1)
	select {
	case q <- c:
		return <-c
	case <-ctx.Done():
		var zero T
		return zero
	}
}
