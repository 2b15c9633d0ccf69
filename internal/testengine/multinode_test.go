package testengine

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMultiNodeValidate(t *testing.T) {
	tests := map[string]struct {
		m       MultiNode
		wantErr string
	}{
		"single node":       {MultiNode{}, ""},
		"worker":            {MultiNode{DistInitAddr: "leader.svc:5000", NNodes: 2, NodeRank: 1}, ""},
		"rank out of range": {MultiNode{DistInitAddr: "leader.svc:5000", NNodes: 2, NodeRank: 2}, "--node-rank 2 is not in [0, --nnodes 2)"},
		"no port":           {MultiNode{DistInitAddr: "leader.svc", NNodes: 2}, "is not HOST:PORT"},
		"bad port":          {MultiNode{DistInitAddr: "leader.svc:0", NNodes: 2}, "is not a TCP port"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := tt.m.validate()
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// Two workers resolve the leader by name and join; the leader is complete
// only then, and lists them.
func TestRendezvous(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rv := newRendezvous(3)
	srv := httptest.NewServer(rv.Handler(log))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for rank, pod := range map[int]string{1: "g-engine-0-1", 2: "g-engine-0-2"} {
		select {
		case <-rv.all:
			t.Fatal("complete before every rank joined")
		default:
		}
		addrs, err := joinLeader(ctx, MultiNode{DistInitAddr: "localhost:" + port, NNodes: 3, NodeRank: rank}, pod, log)
		require.NoError(t, err)
		assert.NotEmpty(t, addrs, "the name was resolved")
	}
	select {
	case <-rv.all:
	case <-time.After(time.Second):
		t.Fatal("not complete after every rank joined")
	}
	assert.Equal(t, []RankInfo{{1, "g-engine-0-1"}, {2, "g-engine-0-2"}}, rv.snapshot())

	// A leader that never answers: the worker gives up when ctx ends, saying why.
	short, cancel2 := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel2()
	_, err := joinLeader(short, MultiNode{DistInitAddr: "127.0.0.1:1", NNodes: 2, NodeRank: 1}, "p", log)
	assert.ErrorContains(t, err, "rank 1 never joined 127.0.0.1:1")
}
