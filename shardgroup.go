package informer

// ShardGroup is the membership of the replicas of one controller that
// share resources through dynamic shards.
type ShardGroup struct{}
