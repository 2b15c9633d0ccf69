package promtext

import (
	"bytes"
	"context"
	"fmt"

	"k8s.io/client-go/rest"
)

// APIServerWebhookDuration is the API server's histogram of its calls to
// admission webhooks, one series set per webhook (label name) and its
// outcome: the round trip a request waits for.
const APIServerWebhookDuration = "apiserver_admission_webhook_admission_duration_seconds"

// APIServerWebhookCalls is the API server's calls to the admission
// webhook named webhook (the name its configuration registers), summed
// over operations and outcomes: one scrape (ScrapeAPIServer) of
// APIServerWebhookDuration, matched by the label name (not webhook_name,
// which some versions add beside it).
func APIServerWebhookCalls(ctx context.Context, c rest.Interface, webhook string) (Histogram, error) {
	f, err := ScrapeAPIServer(ctx, c)
	if err != nil {
		return Histogram{}, err
	}
	return f.Histogram(APIServerWebhookDuration, Labels{"name": webhook})
}

// ScrapeAPIServer reads the API server's /metrics through c (a client of
// the API server, which authenticates as it): what Scrape does for a plain
// URL. A failed request returns the client's error.
func ScrapeAPIServer(ctx context.Context, c rest.Interface) (Families, error) {
	raw, err := c.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	f, err := Parse(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the API server's /metrics: %w", err)
	}
	return f, nil
}
