package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/berthdev/berth/webhook/admission"
	"github.com/berthdev/berth/webhook/metrics"
)

func TestRouterProbesAndMetrics(t *testing.T) {
	var synced atomic.Bool
	m := metrics.New()
	routes := []Route{{Path: PathValidateProfiles, Name: "validate-profiles", Decide: func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return admission.Denied(422, "no")
	}}}
	srv := httptest.NewServer(Router(routes, synced.Load, m, slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer srv.Close()

	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, _ := get("/healthz")
	assert.Equal(t, http.StatusOK, code)
	code, body := get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code, "not ready before the caches sync")
	assert.Contains(t, body, "caches not synced")
	synced.Store(true)
	code, _ = get("/readyz")
	assert.Equal(t, http.StatusOK, code)

	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"CREATE","kind":{"group":"ome.io","version":"v1beta1","kind":"ClusterEngineRuntimeProfile"},"resource":{"group":"ome.io","version":"v1beta1","resource":"clusterengineruntimeprofiles"},"object":{}}}`
	resp, err := http.Post(srv.URL+PathValidateProfiles, "application/json", strings.NewReader(review))
	require.NoError(t, err)
	resp.Body.Close()
	code, body = get("/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `berth_admission_requests_total{handler="validate-profiles",operation="CREATE",result="denied"} 1`)
	assert.Contains(t, body, `berth_admission_duration_seconds_count{handler="validate-profiles"} 1`)

	resp, err = http.Get(srv.URL + PathValidateProfiles)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "admission paths take POST only")
}
