package haproxy

import "context"

// Up to 3.0, a request line of commands joined with ';' is answered, in
// prompt mode, with one prompt after each command's answer; 3.2 (Debian
// sid's 3.2.26, seen here) ends the whole line with one prompt, the
// answers run together before it, so an answer can no longer be told from
// the next one. Sent over 3.2 in the joined form, a batch of two commands
// got one "answer" and then waited for a prompt that never came.
//
// So each connection learns the worker's version first (`show info`) and
// joins commands only for a worker known to be older than 3.1;
// any other (3.1, which was not tried here, included) gets one command per
// line, which every version frames with a prompt of its own.
const joinedBelowMajor, joinedBelowMinor = 3, 1

// learnFramingLocked reads the worker's version on the new connection and
// sets r.lineMax for it.
func (r *Runtime) learnFramingLocked(ctx context.Context) error {
	r.lineMax = 0
	ans, err := r.roundTripLocked(ctx, []string{"show info"})
	if err != nil {
		return err
	}
	if r.conn == nil { // the context ended as the answer came
		return context.DeadlineExceeded
	}
	r.lineMax = framingFor(ParseInfo(ans[0].Text)["Version"])
	return nil
}

// framingFor is the longest joined request line for a worker that prints
// version (0: one command per line).
func framingFor(version string) int {
	v, err := ParseVersion(version)
	if err != nil || v.AtLeast(joinedBelowMajor, joinedBelowMinor) {
		return 0
	}
	return lineMax
}
