package informer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"
)

// A periodic save (SnapshotOptions.Interval) runs beside the informer's own
// work, and encoding 100,000 pods as fast as it can takes a core's worth
// of CPU for the whole save: on 2 cores W1 ran 1.5-1.6x slower meanwhile
// (W1save, docs/benchmarks.md). So a periodic save is paced: it encodes a
// small chunk of objects, then waits savePaceDuty-1 times as long as the
// chunk took, so that it uses at most 1/savePaceDuty of one core and takes
// at least savePaceDuty times as long (about 30 times for 100,000 pods:
// BenchmarkSnapshot/write-paced, docs/restart.md). The save when Run ends
// is not paced: the process is stopping, and a fast stop matters more than
// the CPU it takes.

// savePaceDuty is k, the pacing's duty cycle: a paced save waits k-1 times
// each chunk's elapsed time after it, so it takes at most 1/k of one core
// and at least k times as long as unpaced. Chosen by W1save
// (docs/benchmarks.md, "Paced"): with k = 20, W1 while another informer saves 100,000 pods ran
// at 1.00x (0.91-1.10) W1 beside it not saving, against 1.55x unpaced;
// k = 40 and smaller chunks made no difference the noise could resolve,
// and k = 40's saves take twice as long.
const savePaceDuty = 20

// savePaceChunkObjects and savePaceChunkWork end a chunk: after this many
// objects, or once the chunk has taken this long, whichever comes first,
// so that a chunk is short (a millisecond at most) and the save's share of
// a core even over a handler's timescale, and long enough for the wait's
// timer to cost nothing next to it. Chunks of 64 objects or 250 µs made
// no difference W1save could resolve (docs/benchmarks.md, "Paced").
const (
	savePaceChunkObjects = 256
	savePaceChunkWork    = time.Millisecond
)

// savePacer spreads a periodic save's encoding over time (see
// savePaceDuty). Its chunk method is encodeSnapshot's hook, called after
// each object; a nil *savePacer does not pace (the final save).
type savePacer struct {
	ctx context.Context
	clk clock.WithTicker
	// duty, chunkObjects and chunkWork are savePaceDuty,
	// savePaceChunkObjects and savePaceChunkWork, but for tests.
	duty         int
	chunkObjects int
	chunkWork    time.Duration

	// chunkStart is when the current chunk began; objects counts the
	// objects encoded in it.
	chunkStart time.Time
	objects    int
	// waits counts the waits so far (a save's log line reports them).
	waits int
}

// newSavePacer returns the pacer of one periodic save, which waits on clk
// and is abandoned when ctx is done. The first chunk starts now.
func newSavePacer(ctx context.Context, clk clock.WithTicker) *savePacer {
	return &savePacer{
		ctx: ctx, clk: clk,
		duty: savePaceDuty, chunkObjects: savePaceChunkObjects, chunkWork: savePaceChunkWork,
		chunkStart: clk.Now(),
	}
}

// chunk counts one more object encoded and, once the current chunk is
// complete, waits duty-1 times as long as the chunk took before starting
// the next one. It returns an error wrapping the context's cause if the
// context is done before or while it waits: the save is then abandoned
// (writeSnapshotPaced removes its temporary file and leaves the previous
// snapshot). On a nil pacer it does nothing.
func (p *savePacer) chunk() error {
	if p == nil {
		return nil
	}
	p.objects++
	elapsed := p.clk.Since(p.chunkStart)
	if p.objects < p.chunkObjects && elapsed < p.chunkWork {
		return nil
	}
	p.waits++
	// Always through the clock's timer, even for a zero wait (a clock too
	// coarse to see the chunk): a fake clock then shows every wait.
	timer := p.clk.NewTimer(time.Duration(p.duty-1) * elapsed)
	defer timer.Stop()
	select {
	case <-p.ctx.Done():
		return fmt.Errorf("%w: %w", errSaveAbandoned, context.Cause(p.ctx))
	case <-timer.C():
	}
	p.objects = 0
	p.chunkStart = p.clk.Now()
	return nil
}

// errSaveAbandoned says that a paced save stopped because its context was
// done (the informer is stopping; the final, unpaced save follows).
var errSaveAbandoned = errors.New("the periodic snapshot save was abandoned")

// waitCount returns the waits so far; 0 for a nil pacer.
func (p *savePacer) waitCount() int {
	if p == nil {
		return 0
	}
	return p.waits
}
