package handlers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// settle tries once, then again after each wait while the try fails, and
// stops at a success, at an error final calls final, or when ctx is done.
func TestSettle(t *testing.T) {
	lag, pending := errors.New("not in the cache yet"), errors.New("metadata pending")
	isPending := func(err error) bool { return err == pending }
	waits := []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		results   []error // of each try; the last repeats
		final     func(error) bool
		wantTries int
		wantErr   error
	}{
		{name: "at once", ctx: ctx, results: []error{nil}, wantTries: 1},
		{name: "after the cache caught up", ctx: ctx, results: []error{lag, lag, nil}, wantTries: 3},
		{name: "never", ctx: ctx, results: []error{lag}, wantTries: 4, wantErr: lag},
		{name: "final error", ctx: ctx, results: []error{lag, pending}, final: isPending, wantTries: 2, wantErr: pending},
		{name: "no final: retried", ctx: ctx, results: []error{pending, nil}, wantTries: 2},
		{name: "ctx done", ctx: done, results: []error{lag}, wantTries: 1, wantErr: lag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tries := 0
			want := &choice{}
			c, err := settle(tc.ctx, waits, func() (*choice, error) {
				err := tc.results[min(tries, len(tc.results)-1)]
				tries++
				if err != nil {
					return nil, err
				}
				return want, nil
			}, tc.final)
			assert.Equal(t, tc.wantTries, tries)
			assert.Equal(t, tc.wantErr, err)
			if tc.wantErr == nil {
				assert.Same(t, want, c)
			} else {
				assert.Nil(t, c)
			}
		})
	}
}
