package sqlstore

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/reinhq/rein/trace"
)

// Page lists at most limit of a run's records of type T whose row comes
// after the row after (0: from the first), in order. The columns named in
// omit are read as empty: a model call's request is the whole transcript
// it sent, which a reader paging through a long run has no use for.
//
// A reader of a run of any length pages through it with this, never
// holding more than a page: within one table a row's id is its place in
// the run.
func Page[T trace.Record](ctx context.Context, s *Store, runID string, after int64, limit int, omit ...string) ([]T, error) {
	return queryCols[T](ctx, s, omit, `WHERE run_id = ? AND rowid > ? ORDER BY rowid LIMIT ?`, runID, after, limit)
}

// OfSteps lists a run's records of type T that belong to the steps whose
// ids are first to last, in order: the policy events, sandbox events and
// edits of one page of steps.
func OfSteps[T trace.Record](ctx context.Context, s *Store, runID string, first, last int64) ([]T, error) {
	return queryCols[T](ctx, s, nil, `WHERE run_id = ? AND step_id BETWEEN ? AND ? ORDER BY rowid`, runID, first, last)
}

// One reads the record of type T at row of a run, or nil when the run has
// none there.
func One[T trace.Record](ctx context.Context, s *Store, runID string, row int64) (*T, error) {
	out, err := queryCols[T](ctx, s, nil, `WHERE run_id = ? AND rowid = ?`, runID, row)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	return &out[0], nil
}

// queryCols is query with the columns named in omit left out.
func queryCols[T trace.Record](ctx context.Context, s *Store, omit []string, where string, args ...any) ([]T, error) {
	var zero T
	t := reflect.TypeOf(zero)
	var cols []column
	for _, c := range columns(t) {
		if !slices.Contains(omit, c.name) {
			cols = append(cols, c)
		}
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = `"` + c.name + `"`
	}
	rows, err := s.queryRows(ctx, fmt.Sprintf(`SELECT rowid, %s FROM %s %s`, strings.Join(names, ", "), trace.Table(zero), where), args...)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		rec, err := scan(rows, t, cols)
		if err != nil {
			return nil, err
		}
		out = append(out, rec.Interface().(T))
	}
	return out, rows.Err()
}

// StepUsage is one model call's tokens, as a chart of a run reads them.
type StepUsage struct {
	Step       int    `json:"step"`
	Purpose    string `json:"purpose,omitempty"`
	Input      int64  `json:"input_tokens"`
	Output     int64  `json:"output_tokens"`
	CacheRead  int64  `json:"cache_read_tokens"`
	CacheWrite int64  `json:"cache_write_tokens"`
}

// Usage lists the tokens of every model call of a run, in order, reading
// the counts alone: a run of ten thousand steps is a few hundred
// kilobytes of numbers, never its transcripts.
func (s *Store) Usage(ctx context.Context, runID string) ([]StepUsage, error) {
	rows, err := s.queryRows(ctx, `SELECT step, purpose, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens
		FROM provider_calls WHERE run_id = ? ORDER BY rowid`, runID)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer rows.Close()
	var out []StepUsage
	for rows.Next() {
		var u StepUsage
		if err := rows.Scan(&u.Step, &u.Purpose, &u.Input, &u.Output, &u.CacheRead, &u.CacheWrite); err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// RunsPage lists at most limit runs, newest first, skipping the newest
// skip, with what Runs says of each.
func (s *Store) RunsPage(ctx context.Context, skip, limit int) ([]trace.RunSummary, error) {
	return s.runs(ctx, `ORDER BY rowid DESC LIMIT ? OFFSET ?`, limit, skip)
}

// RunByID is one run as Runs lists it, or nil when the trace has none of
// that id.
func (s *Store) RunByID(ctx context.Context, id string) (*trace.RunSummary, error) {
	out, err := s.runs(ctx, `WHERE id = ? ORDER BY rowid LIMIT 1`, id)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	return &out[0], nil
}

// ChildRuns lists the runs whose ids are the given run's followed by a
// dot (the runs spawn_agent started under it, and theirs), oldest first.
func (s *Store) ChildRuns(ctx context.Context, parent string) ([]string, error) {
	// The database measures the prefix as it measures the id: in
	// characters, which Go's len does not count.
	rows, err := s.queryRows(ctx, `SELECT id FROM runs WHERE substr(id, 1, length(CAST(? AS TEXT))) = ? ORDER BY rowid`, parent+".", parent+".")
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
