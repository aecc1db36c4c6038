package tproxy

import "fmt"

// Probe reports whether the controller can set TPROXY up in the network
// namespace of opts (NetNS, "" its own): it puts the policy routing and
// the table in place as the driver does (Setup; the sets' elements left
// alone), and nil means they are there for the driver. On failure it
// removes what it put in place and returns why (the cause wrapped, so a
// missing capability reads as "operation not permitted"): the caller
// (--listeners=auto) then runs per-port frontends.
func Probe(opts Options) error {
	d, err := New(opts)
	if err == nil {
		err = d.Setup()
		d.Close()
	}
	if err == nil {
		return nil
	}
	if cerr := Cleanup(opts.NetNS, opts); cerr != nil {
		return fmt.Errorf("%w (and removing what was set up: %v)", err, cerr)
	}
	return err
}
