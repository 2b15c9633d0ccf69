package testengine

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ChatUsage documents the client mode, which tests run inside a pod to
// reach a service by its DNS name.
const ChatUsage = `berth-test-engine chat --url URL [--model NAME] [--prompt TEXT] [--retry-for DURATION]

Sends one OpenAI chat completion to URL (the server's base, e.g.
http://my-service.my-namespace.svc) and prints the reply's text. Retries
connection errors and 5xx answers until --retry-for has passed. Exit 0 with
a reply, 1 without one, 2 for a bad command line.
`

// RunChat is the client mode: one chat completion, its text on stdout.
func RunChat(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { _, _ = io.WriteString(stderr, ChatUsage) }
	url := fs.String("url", "", "the server's base URL")
	model := fs.String("model", "", "the model to ask for (default: the first of /v1/models)")
	prompt := fs.String("prompt", "Say hello.", "the user message")
	retry := fs.Duration("retry-for", 0, "how long to retry failures")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *url == "" || fs.NArg() > 0 {
		_, _ = io.WriteString(stderr, ChatUsage)
		return 2
	}
	base := strings.TrimSuffix(*url, "/")
	deadline := time.Now().Add(*retry)
	client := &http.Client{Timeout: 30 * time.Second}
	for {
		text, err := chatOnce(ctx, client, base, *model, *prompt)
		if err == nil {
			_, _ = fmt.Fprintln(stdout, text)
			return 0
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_, _ = fmt.Fprintf(stderr, "berth-test-engine chat: %s: %v\n", base, err)
			return 1
		}
		_, _ = fmt.Fprintf(stderr, "berth-test-engine chat: %s: %v (retrying)\n", base, err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// chatOnce asks once; an error for a failed connection, a non-200 answer
// or a reply without choices.
func chatOnce(ctx context.Context, client *http.Client, base, model, prompt string) (string, error) {
	if model == "" {
		var list struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := getJSON(ctx, client, base+"/v1/models", &list); err != nil {
			return "", err
		}
		if len(list.Data) == 0 {
			return "", fmt.Errorf("GET /v1/models lists no model")
		}
		model = list.Data[0].ID
	}
	body, _ := json.Marshal(map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": prompt}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	var reply struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := doJSON(client, req, &reply); err != nil {
		return "", err
	}
	if len(reply.Choices) == 0 {
		return "", fmt.Errorf("the reply has no choices")
	}
	return reply.Choices[0].Message.Content, nil
}

func getJSON(ctx context.Context, client *http.Client, url string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	return doJSON(client, req, into)
}

func doJSON(client *http.Client, req *http.Request, into any) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", req.Method, req.URL.Path, resp.Status, strings.TrimSpace(string(data)))
	}
	return json.Unmarshal(data, into)
}
