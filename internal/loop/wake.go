package loop

// Wake wakes a worker (Writers.Wake): Poke never blocks, and pokes made
// while one is pending merge into it.
type Wake chan struct{}

// NewWake returns a Wake with room for the one pending poke.
func NewWake() Wake { return make(Wake, 1) }

// Poke asks for a wake-up.
func (w Wake) Poke() {
	select {
	case w <- struct{}{}:
	default:
	}
}
