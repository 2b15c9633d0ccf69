package sidecar

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeAdapters(t *testing.T, path string, list ...Adapter) {
	t.Helper()
	data, err := json.Marshal(list)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

func TestLoRAFollowsTheFile(t *testing.T) {
	for _, kind := range []string{EngineSGLang, EngineVLLM} {
		t.Run(kind, func(t *testing.T) {
			engineSW, engine := startEngine(t, kind)
			file := filepath.Join(t.TempDir(), "adapters")
			e := Engine{Kind: kind, Base: engine.URL, HealthPath: "/health", Client: http.DefaultClient}
			l := &LoRA{File: file, Engine: e, Log: quiet(), Metrics: NewMetrics()}
			ctx := context.Background()
			sql, chat := Adapter{"sql", adapterDir(t)}, Adapter{"chat", adapterDir(t)}

			l.Sync(ctx)
			assert.Equal(t, AdapterState{Loaded: []Adapter{}, CheckedAt: l.State().CheckedAt}, l.State(), "no file yet: nothing to do")

			writeAdapters(t, file, sql, chat)
			l.Sync(ctx)
			assert.Equal(t, []Adapter{chat, sql}, l.State().Loaded)
			assert.Empty(t, l.State().Failed)
			assert.Equal(t, 2, l.State().Desired)

			bad := Adapter{"broken", filepath.Join(t.TempDir(), "absent")}
			writeAdapters(t, file, sql, bad)
			l.Sync(ctx)
			st := l.State()
			assert.Equal(t, []Adapter{sql}, st.Loaded, "chat unloaded; sql stays loaded next to a failing load")
			require.Len(t, st.Failed, 1)
			assert.Equal(t, "broken", st.Failed[0].Name)
			assert.Contains(t, st.Failed[0].Reason, "absent", "the engine's reason")

			engineSW.set(newEngine(t, kind)) // the engine restarts and has lost its adapters
			loaded, err := e.Loaded(ctx)
			require.NoError(t, err)
			assert.Empty(t, loaded)
			writeAdapters(t, file, sql)
			l.Sync(ctx)
			assert.Equal(t, []Adapter{sql}, l.State().Loaded, "reloaded after the engine restart")

			moved := Adapter{"sql", adapterDir(t)}
			writeAdapters(t, file, moved)
			l.Sync(ctx)
			assert.Equal(t, []Adapter{moved}, l.State().Loaded, "a new source under the same name is reloaded")

			require.NoError(t, os.WriteFile(file, []byte("not json"), 0o644))
			l.Sync(ctx)
			assert.Contains(t, l.State().Error, "want a JSON list")
			loaded, err = e.Loaded(ctx)
			require.NoError(t, err)
			assert.Len(t, loaded, 1, "a bad file changes nothing on the engine")
		})
	}
}

func TestLoRAEngineDown(t *testing.T) {
	file := filepath.Join(t.TempDir(), "adapters")
	writeAdapters(t, file, Adapter{"sql", "/a"})
	l := &LoRA{File: file, Engine: Engine{Kind: EngineSGLang, Base: "http://127.0.0.1:1", Client: http.DefaultClient},
		Log: quiet(), Metrics: NewMetrics()}
	l.Sync(context.Background())
	assert.Contains(t, l.State().Error, "listing the engine's adapters")
}

func TestEngineMessage(t *testing.T) {
	assert.Equal(t, "bad", engineMessage(`{"error":{"message":"bad"}}`))
	assert.Equal(t, "worse", engineMessage(`{"object":"error","message":"worse"}`))
	assert.Equal(t, "sg", engineMessage(`{"success":false,"error_message":"sg"}`))
	assert.Equal(t, "plain", engineMessage("plain"))
}
