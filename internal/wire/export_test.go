package wire

// len returns the number of strings and sub-objects held, live or not yet
// swept.
func (t *InternTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.strings.slots) + t.shared.len() + t.raw.len() + t.trees.len()
	for _, set := range t.typed {
		n += len(set.slots)
	}
	return n
}

// len returns the number of slots of every set.
func (s *podShares) len() int {
	return len(s.stringMaps.slots) + len(s.resourceLists.slots) + len(s.strs.slots) + len(s.ownerRefs.slots) +
		len(s.ports.slots) + len(s.envFrom.slots) + len(s.env.slots) + len(s.mounts.slots) + len(s.resizePolicy.slots) +
		len(s.probes.slots) + len(s.lifecycles.slots) + len(s.securityCtx.slots) + len(s.podSecurity.slots) +
		len(s.tolerations.slots) + len(s.pullSecrets.slots) + len(s.configMapVols.slots) + len(s.secretVols.slots) +
		len(s.projectedVols.slots) + len(s.emptyDirVols.slots) + len(s.downwardVols.slots)
}

// len returns the number of canonical sub-trees held, live or not yet
// swept.
func (t *unstrTreeSet) len() int {
	return len(t.slots)
}
