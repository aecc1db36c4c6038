package settings

import "fmt"

// Validate reports whether s is what Apply and the desired package could
// have produced: every field reads back through its own strict parser to
// the same text, the source ranges are canonical, the affinity in range.
// Settings read from a file (the last good settings) pass it before they
// are used, so a damaged or edited file cannot put what the grammar
// refuses, such as HAProxy directives, into the config.
func Validate(s Settings) error {
	for _, f := range fields {
		v := f.get(&s)
		var t Settings
		if err := f.set(&t, v); err != nil {
			return &FieldError{Key: Prefix + f.name, Value: v, Reason: err.Error()}
		}
		if got := f.get(&t); got != v {
			return &FieldError{Key: Prefix + f.name, Value: v, Reason: "not in canonical form"}
		}
	}
	if s.SourceRanges != "" {
		p, err := ParseSourceRanges(nil, s.SourceRanges)
		if err != nil || FormatSourceRanges(p) != s.SourceRanges {
			return &FieldError{Key: SourceRangesField, Value: s.SourceRanges, Reason: "not canonical source ranges"}
		}
	}
	if s.Affinity < 0 || s.Affinity > MaxAffinityTimeout {
		return &FieldError{Key: "sessionAffinityConfig", Value: fmt.Sprint(s.Affinity), Reason: "out of range"}
	}
	return nil
}
