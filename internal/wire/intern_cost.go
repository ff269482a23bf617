package wire

// WithLock calls f with t's lock held: for a reader of the table's memory
// (the informer's cost report walks it) that must not race with the
// decoders and passes using it. f must not use the table.
func (t *InternTable) WithLock(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f()
}
