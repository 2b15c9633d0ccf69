package testengine

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pdEngine is a prefill or decode engine on loopback.
type pdEngine struct {
	e         *Engine
	url       string
	bootstrap string // prefill: the bootstrap server's URL
}

func startPD(t *testing.T, mode, pod string, opts EngineOptions) pdEngine {
	t.Helper()
	opts.Pod = pod
	e, srv := startEngine(t, opts, "python3", "-m", "sglang.launch_server", "--model-path", modelDir(t, "LlamaForCausalLM"),
		"--served-model-name", "llama", "--disaggregation-mode", mode)
	p := pdEngine{e: e, url: srv.URL}
	if mode == "prefill" {
		p.bootstrap = newLoopback(t, e.BootstrapHandler())
	}
	return p
}

func port(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Port()
}

func newTestRouter(t *testing.T, args ...string) (*Router, string) {
	t.Helper()
	cfg, err := Parse(append([]string{"python3", "-m", "sglang_router.launch_router"}, args...))
	require.NoError(t, err)
	r, err := NewRouter(cfg, nil)
	require.NoError(t, err)
	return r, newLoopback(t, r.Handler())
}

var pdReply = regexp.MustCompile(`on pod (decode-\d), decoding KV of room (\d+) prefilled on pod (prefill-\d): `)

// TestPDThroughTheRouter runs two prefills, two decodes and a PD router on
// loopback: every reply comes from a decode that fetched its room's KV from
// the prefill the router paired it with.
func TestPDThroughTheRouter(t *testing.T) {
	p0, p1 := startPD(t, "prefill", "prefill-0", EngineOptions{}), startPD(t, "prefill", "prefill-1", EngineOptions{})
	d0, d1 := startPD(t, "decode", "decode-0", EngineOptions{}), startPD(t, "decode", "decode-1", EngineOptions{})
	_, router := newTestRouter(t, "--pd-disaggregation", "--policy", "cache_aware",
		"--prefill", p0.url, port(t, p0.bootstrap), "--prefill", p1.url, port(t, p1.bootstrap), "--decode", d0.url, "--decode", d1.url)

	pairs := map[string]bool{}
	rooms := map[string]bool{}
	for i := range 4 {
		a := call(t, "POST", router+"/v1/chat/completions",
			fmt.Sprintf(`{"model":"llama","messages":[{"role":"user","content":"question %d"}]}`, i))
		require.Equal(t, 200, a.status, a.body)
		assert.Equal(t, "stand-in", a.header.Get(HeaderStandIn))
		m := pdReply.FindStringSubmatch(a.body)
		require.NotNil(t, m, a.body)
		assert.Contains(t, a.body, fmt.Sprintf("question %d", i))
		pairs[m[1]+"<"+m[3]] = true
		rooms[m[2]] = true
	}
	assert.Len(t, rooms, 4, "a room per request")
	// Round robin over both roles (workers in URL order, so which prefill
	// meets which decode depends on the ports): every pod served.
	decodes, prefills := map[string]bool{}, map[string]bool{}
	for pair := range pairs {
		d, p, _ := strings.Cut(pair, "<")
		decodes[d], prefills[p] = true, true
	}
	assert.Equal(t, map[string]bool{"decode-0": true, "decode-1": true}, decodes)
	assert.Equal(t, map[string]bool{"prefill-0": true, "prefill-1": true}, prefills)

	a := call(t, "POST", router+"/v1/completions", `{"model":"llama","prompt":"streamed words","stream":true}`)
	require.Equal(t, 200, a.status, a.body)
	assert.Equal(t, "text/event-stream", a.header.Get("Content-Type"))
	assert.True(t, strings.HasSuffix(strings.TrimSpace(a.body), "data: [DONE]"))
	assert.Contains(t, a.body, `" prefilled"`)

	for _, e := range []pdEngine{p0, p1} {
		assert.Contains(t, call(t, "GET", e.url+"/metrics", "").body, `berth_test_engine_kv_transfers_total{direction="served"}`)
	}
	assert.Contains(t, call(t, "GET", d0.url+"/metrics", "").body, `berth_test_engine_kv_transfers_total{direction="fetched"} `)
	assert.Contains(t, call(t, "GET", router+"/metrics", "").body, `berth_test_engine_router_upstream_requests_total{result="200",role="decode"} 5`)
	assert.Contains(t, call(t, "GET", router+"/metrics", "").body, `berth_test_engine_router_workers{role="prefill"} 2`)
}

func TestDecodeWaitsForThePrefill(t *testing.T) {
	p := startPD(t, "prefill", "prefill-0", EngineOptions{})
	d := startPD(t, "decode", "decode-0", EngineOptions{KVWait: 5 * time.Second})
	body := fmt.Sprintf(`{"prompt":"late prefill","bootstrap_host":"127.0.0.1","bootstrap_port":%s,"bootstrap_room":42}`, port(t, p.bootstrap))
	var wg sync.WaitGroup
	var decoded answer
	wg.Add(1)
	go func() {
		defer wg.Done()
		decoded = call(t, "POST", d.url+"/v1/completions", body)
	}()
	time.Sleep(300 * time.Millisecond) // the decode polls a room that is not there yet
	pre := call(t, "POST", p.url+"/v1/completions", body)
	require.Equal(t, 200, pre.status, pre.body)
	assert.Contains(t, pre.body, "on pod prefill-0, prefill of room 42: late prefill")
	wg.Wait()
	require.Equal(t, 200, decoded.status, decoded.body)
	assert.Contains(t, decoded.body, "on pod decode-0, decoding KV of room 42 prefilled on pod prefill-0: late prefill")
}

func TestDecodeErrors(t *testing.T) {
	p := startPD(t, "prefill", "prefill-0", EngineOptions{})
	d := startPD(t, "decode", "decode-0", EngineOptions{KVWait: 200 * time.Millisecond})
	bp := port(t, p.bootstrap)
	require.Equal(t, 200, call(t, "POST", p.url+"/v1/completions", `{"prompt":"first prompt","bootstrap_room":7}`).status)
	tests := []struct {
		name, body string
		status     int
		contains   string
	}{
		{name: "no bootstrap fields", body: `{"prompt":"x"}`, status: 400, contains: "pod decode-0 is a decode engine: a request needs bootstrap_host"},
		{name: "another prompt's room", body: `{"prompt":"second prompt","bootstrap_host":"127.0.0.1","bootstrap_port":` + bp + `,"bootstrap_room":7}`,
			status: 500, contains: "the KV of room 7 from pod prefill-0 was prefilled for another prompt"},
		{name: "a room never prefilled", body: `{"prompt":"x","bootstrap_host":"127.0.0.1","bootstrap_port":` + bp + `,"bootstrap_room":8}`,
			status: 502, contains: "decode pod decode-0 got no KV for room 8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, "POST", d.url+"/v1/completions", tt.body)
			assert.Equal(t, tt.status, a.status, a.body)
			assert.Contains(t, a.body, tt.contains)
		})
	}
	assert.Equal(t, 404, call(t, "GET", p.bootstrap+"/kv/8", "").status)
	assert.Equal(t, 400, call(t, "GET", p.bootstrap+"/kv/x", "").status)
}

// TestPDPrefillDown: a prefill that cannot be reached fails the request at
// once, naming it, instead of leaving the decode to wait for KV.
func TestPDPrefillDown(t *testing.T) {
	d := startPD(t, "decode", "decode-0", EngineOptions{KVWait: time.Minute})
	_, router := newTestRouter(t, "--pd-disaggregation", "--prefill", "http://127.0.0.1:1", "--decode", d.url)
	start := time.Now()
	a := call(t, "POST", router+"/v1/completions", `{"prompt":"x"}`)
	assert.Equal(t, 502, a.status, a.body)
	assert.Contains(t, a.body, "prefill worker http://127.0.0.1:1")
	assert.Less(t, time.Since(start), 30*time.Second)
}

// TestPDClientErrors: a request both sides reject gets the decode's
// answer, never a 502 that depends on which side answered first.
func TestPDClientErrors(t *testing.T) {
	p := startPD(t, "prefill", "prefill-0", EngineOptions{})
	d := startPD(t, "decode", "decode-0", EngineOptions{})
	_, router := newTestRouter(t, "--pd-disaggregation", "--prefill", p.url, port(t, p.bootstrap), "--decode", d.url)
	for range 10 {
		a := call(t, "POST", router+"/v1/completions", `{"model":"nope","prompt":"x"}`)
		require.Equal(t, 404, a.status, a.body)
		assert.Contains(t, a.body, "The model `nope` does not exist.")
	}
	a := call(t, "POST", router+"/v1/completions", `["not an object"]`)
	assert.Equal(t, 400, a.status)
	assert.Contains(t, a.body, "not a JSON object")
	a = call(t, "POST", router+"/v1/completions", `null`)
	assert.Equal(t, 400, a.status)
	assert.Contains(t, a.body, "the request body is not a JSON object: null")
}

// TestPDPrefillNotReady: a prefill answering 5xx fails the request at
// once, naming it and its answer.
func TestPDPrefillNotReady(t *testing.T) {
	cfg, err := Parse([]string{"python3", "-m", "sglang.launch_server", "--model-path", modelDir(t, "X"), "--disaggregation-mode", "prefill"})
	require.NoError(t, err)
	e, err := NewEngine(cfg, Model{Architecture: "X"}, EngineOptions{Pod: "prefill-0"})
	require.NoError(t, err) // never SetReady: /v1/completions answers 503
	prefill := newLoopback(t, e.Handler())
	d := startPD(t, "decode", "decode-0", EngineOptions{KVWait: time.Minute})
	_, router := newTestRouter(t, "--pd-disaggregation", "--prefill", prefill, "--decode", d.url)
	a := call(t, "POST", router+"/v1/completions", `{"prompt":"x"}`)
	assert.Equal(t, 502, a.status)
	assert.Contains(t, a.body, "prefill worker "+prefill+" answered 503")
	assert.Contains(t, a.body, "still loading")
}

// deadURL is an http://127.0.0.1:port nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	return u
}

// TestPDRouterTriesAnotherPairWhenOneIsGone: a worker the router still
// lists but that no longer listens (a pod deleted a moment ago) costs a
// retry, not the request: every request is answered, by the live pair,
// and /v1/models too. With only unreachable workers the answer is a 502
// naming the worker.
func TestPDRouterTriesAnotherPairWhenOneIsGone(t *testing.T) {
	p0 := startPD(t, "prefill", "prefill-0", EngineOptions{})
	d0 := startPD(t, "decode", "decode-0", EngineOptions{})
	gone := deadURL(t)
	for _, tc := range []struct{ name, prefill, decode string }{
		{"a prefill is gone", gone, d0.url},
		{"a decode is gone", p0.url, gone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--pd-disaggregation", "--prefill", p0.url, port(t, p0.bootstrap), "--decode", d0.url}
			if tc.prefill == gone {
				args = append(args, "--prefill", gone, "8998") // the decode waits for KV until the dial error cancels it
			} else {
				args = append(args, "--decode", gone)
			}
			_, router := newTestRouter(t, args...)
			for i := range 6 {
				a := call(t, "POST", router+"/v1/chat/completions", fmt.Sprintf(`{"model":"llama","messages":[{"role":"user","content":"q %d"}]}`, i))
				require.Equal(t, 200, a.status, "request %d: %s", i, a.body)
				m := call(t, "GET", router+"/v1/models", "")
				require.Equal(t, 200, m.status, "models %d: %s", i, m.body)
			}
		})
	}
	_, router := newTestRouter(t, "--pd-disaggregation", "--prefill", gone, "none", "--decode", d0.url)
	a := call(t, "POST", router+"/v1/chat/completions", `{"model":"llama","messages":[{"role":"user","content":"q"}]}`)
	assert.Equal(t, 502, a.status)
	assert.Contains(t, a.body, "prefill worker "+gone)
}
