package informer

import (
	"fmt"

	"github.com/kubetyped/informer/internal/wire"
)

// DecodingTable is the memory several ListerWatchers' decoders share: each
// string they decode (label keys and values, images, names…) is held once
// across all of them, and, in a table made with deduplicate true, each
// sub-object equal to one decoded before (see
// [InformerOptions].Deduplicate, whose caveat then applies across every
// informer of the table). Give one table to the ListerWatchers of many
// clusters ([RESTOptions].DecodingTable) and what the clusters repeat is
// held once: a [Fleet] does so for its clusters. It holds what it shares
// through weak pointers, so it keeps no object alive. It is safe for
// concurrent use.
type DecodingTable struct {
	table *wire.InternTable
}

// NewDecodingTable returns an empty table that shares strings, and equal
// sub-objects too if deduplicate is true.
func NewDecodingTable(deduplicate bool) *DecodingTable {
	if deduplicate {
		return &DecodingTable{table: wire.NewSubObjectSharingTable()}
	}
	return &DecodingTable{table: wire.NewInternTable()}
}

// decodingTable returns the table a ListerWatcher's decoder interns in:
// shared's if set, a new one otherwise; sharesOnDecode says whether the
// decoder can share sub-objects, which a deduplicating shared table
// requires.
func decodingTable(shared *DecodingTable, sharesOnDecode bool) (*wire.InternTable, error) {
	switch {
	case shared == nil:
		return wire.NewInternTable(), nil
	case shared.table.SharesSubObjects() && !sharesOnDecode:
		return nil, fmt.Errorf("RESTOptions.DecodingTable deduplicates, and this ListerWatcher's decoder cannot share sub-objects")
	}
	return shared.table, nil
}
