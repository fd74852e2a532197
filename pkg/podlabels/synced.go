package podlabels

// Synced reports whether the informer has listed this node's pods once:
// before, LookupContainer's "not known" may mean "not listed yet".
// Process accounting counts a GPU process of an unknown pod as an orphan
// only once it is.
func (s *Store) Synced() bool { return s.synced.Load() }
