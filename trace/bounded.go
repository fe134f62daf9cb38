package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// Bounded is a Store that appends at most Limit bytes of records (each
// measured as its JSON) to the Store it wraps: what anything in a launched
// session can make rein record is bounded, so it cannot fill the host's
// disk through the append-only trace. Past the bound every append is
// refused with a *FullError, and OnFull, when set, runs once (to record
// that the bound was reached, in the inner store). Reads pass through.
type Bounded struct {
	Store
	Limit  int64
	OnFull func()

	mu   sync.Mutex
	used int64
	full bool
}

// FullError is an append past a Bounded store's limit.
type FullError struct{ Limit int64 }

func (e *FullError) Error() string {
	return fmt.Sprintf("the session's trace reached its bound of %d MiB ([limits] session_trace): rein refuses what it cannot record", e.Limit>>20)
}

func (b *Bounded) take(recs []Record) error {
	var n int64
	for _, r := range recs {
		data, _ := json.Marshal(r)
		n += int64(len(data))
	}
	b.mu.Lock()
	if b.used+n <= b.Limit {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	first := !b.full
	b.full = true
	b.mu.Unlock()
	if first && b.OnFull != nil {
		b.OnFull()
	}
	return &FullError{Limit: b.Limit}
}

// Full reports whether an append was refused.
func (b *Bounded) Full() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.full
}

// Append appends r if it fits.
func (b *Bounded) Append(ctx context.Context, r Record) (int64, error) {
	if err := b.take([]Record{r}); err != nil {
		return 0, err
	}
	return b.Store.Append(ctx, r)
}

// AppendAll appends recs if they all fit.
func (b *Bounded) AppendAll(ctx context.Context, recs ...Record) ([]int64, error) {
	if err := b.take(recs); err != nil {
		return nil, err
	}
	return b.Store.AppendAll(ctx, recs...)
}
