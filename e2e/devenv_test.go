package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The environment keeps a berth component alive: the webhook killed as a
// crash would is recorded as a death, restarted after the backoff on the
// same port and certificate, and the apiserver calls it again.
func TestWebhookIsRestartedAfterItDies(t *testing.T) {
	require.NotNil(t, webhook.Process, "the berth webhook component did not start")
	before := webhook.Process.Restarts()
	deaths := len(env.Deaths())
	pid := webhook.Process.Process().PID()

	require.NoError(t, webhook.Process.Kill())
	require.Eventually(t, func() bool { return webhook.Process.Restarts() == before+1 && webhook.Process.Ready() },
		time.Minute, 100*time.Millisecond, "the webhook was not restarted; log %s", webhook.Process.LogPath)
	assert.NotEqual(t, pid, webhook.Process.Process().PID())

	all := env.Deaths()
	require.Len(t, all, deaths+1)
	d := all[len(all)-1]
	assert.Equal(t, "berth-webhook", d.Name)
	assert.Equal(t, pid, d.PID)
	assert.EqualError(t, d.Err, "signal: killed")
	assert.Equal(t, before+1, d.Restart)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, webhook.WaitCalled(ctx, env), "the apiserver does not call the restarted webhook")
}
