package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/modelmeta"
)

func init() {
	register(command{
		Name:    "model",
		Summary: "`berth model inspect <uri-or-dir>` prints what berth learns from a model's own files (hf://, s3://, pvc://, a directory); `berth model download <uri> <dest>` fetches every file of an hf:// or s3:// model",
		Run:     runModel,
	})
}

const modelUsage = `usage: berth model inspect <uri-or-dir> [flags]

Reads a model's config.json and safetensors headers (byte ranges, never the
weights) and prints the metadata berth puts in a model's status.discovered:
format, architecture, type, dtype, quantization, exact parameter count,
context length and weight bytes. Flags may come before or after the model.

The model is one of:
  hf://org/repo[@revision]  the Hugging Face Hub or a mirror (--hf-endpoint);
                            a token from --token-file or $HF_TOKEN
  s3://bucket/prefix        any S3-compatible API: AWS (default), MinIO, OCI's
                            S3 compatibility endpoint (--s3-endpoint,
                            --s3-region, --s3-path-style); credentials from
                            $AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY and
                            $AWS_SESSION_TOKEN, anonymous without them
  pvc://claim/sub/path      a claim mounted at --root (the inspection Job)
  /abs/path, ./dir,         a directory; reads never leave --root (default:
  local:///abs/path         the directory itself), symlinks out of it are refused

Output (-o json|yaml) is {"metadata": {...}}; on failure nothing is printed,
the error goes to stderr starting with its reason (Unauthorized, NotFound,
ConfigMissing, HeaderMalformed, TooLarge, Unavailable) and the exit code is 1.
--termination-message-path writes the result, or {"error": {"reason": ...,
"message": ...}}, as compact JSON of at most 4096 bytes: the contract of the
Job the reconciler runs for pvc:// models (see modelmeta.InspectResult).

flags:`

func runModel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, modelUsage)
		newInspectFlags(stderr).fs.PrintDefaults()
		fmt.Fprintln(stderr, "\n"+downloadUsage)
		newDownloadFlags(stderr).fs.PrintDefaults()
		if len(args) == 0 {
			return errors.New("missing subcommand: inspect or download")
		}
		return flag.ErrHelp
	}
	switch args[0] {
	case "inspect":
		return runModelInspect(ctx, args[1:], stdout, stderr)
	case "download":
		return runModelDownload(ctx, args[1:], stdout, stderr)
	}
	return fmt.Errorf("unknown subcommand %q; there are: inspect, download", args[0])
}

type inspectFlags struct {
	fs                 *flag.FlagSet
	output             *string
	hfEndpoint         *string
	tokenFile          *string
	s3Endpoint         *string
	s3Region           *string
	s3PathStyle        *bool
	root               *string
	terminationMessage *string
	timeout            *time.Duration
}

func newInspectFlags(stderr io.Writer) *inspectFlags {
	fs := flag.NewFlagSet("berth model inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, modelUsage); fs.PrintDefaults() }
	return &inspectFlags{
		fs:                 fs,
		output:             fs.String("o", "json", "output format: json or yaml"),
		hfEndpoint:         fs.String("hf-endpoint", envOr("", "HF_ENDPOINT"), "Hugging Face Hub endpoint or mirror; $HF_ENDPOINT when set, else "+modelmeta.DefaultHFEndpoint),
		tokenFile:          fs.String("token-file", "", "file holding the Hub token (default: $HF_TOKEN, if set)"),
		s3Endpoint:         fs.String("s3-endpoint", envOr("", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"), "S3-compatible endpoint URL; $AWS_ENDPOINT_URL_S3 or $AWS_ENDPOINT_URL when set, else AWS's regional endpoint"),
		s3Region:           fs.String("s3-region", envOr(modelmeta.DefaultS3Region, "AWS_REGION", "AWS_DEFAULT_REGION"), "S3 region signed into requests; $AWS_REGION or $AWS_DEFAULT_REGION when set"),
		s3PathStyle:        fs.Bool("s3-path-style", false, "address the bucket in the path (MinIO, OCI), not the host name"),
		root:               fs.String("root", "", "directory every read of a pvc:// or local model stays inside; for pvc:// where the claim is mounted"),
		terminationMessage: fs.String("termination-message-path", "", "also write the result as compact JSON (at most 4096 bytes) to this file, e.g. /dev/termination-log"),
		timeout:            fs.Duration("timeout", 5*time.Minute, "give up after this long"),
	}
}

// parseInterleaved parses flags that come before or after the positional
// arguments.
func (f *inspectFlags) parseInterleaved(args []string) ([]string, error) {
	var positional []string
	for {
		if err := f.fs.Parse(args); err != nil {
			return nil, err
		}
		if f.fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, f.fs.Arg(0))
		args = f.fs.Args()[1:]
	}
}

func runModelInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newInspectFlags(stderr)
	pos, err := f.parseInterleaved(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("want one model (a URI or a directory), got %d; see berth model -h", len(pos))
	}
	if *f.output != "json" && *f.output != "yaml" {
		return fmt.Errorf("-o %q: want json or yaml", *f.output)
	}
	ctx, cancel := context.WithTimeout(ctx, *f.timeout)
	defer cancel()

	md, err := inspect(ctx, pos[0], f)
	result := modelmeta.NewInspectResult(md, err)
	if *f.terminationMessage != "" {
		if werr := os.WriteFile(*f.terminationMessage, result.TerminationMessage(), 0o644); werr != nil {
			return errors.Join(err, fmt.Errorf("writing the termination message: %w", werr))
		}
	}
	if err != nil {
		return err
	}
	return printResult(stdout, result, *f.output)
}

// inspect builds the source for target and runs Discover on it.
func inspect(ctx context.Context, target string, f *inspectFlags) (modelmeta.Metadata, error) {
	src, err := inspectSource(target, f)
	if err != nil {
		return modelmeta.Metadata{}, err
	}
	return modelmeta.Discover(ctx, src, modelmeta.Options{})
}

func inspectSource(target string, f *inspectFlags) (modelmeta.Source, error) {
	if !strings.Contains(target, "://") && !strings.HasPrefix(target, "/") {
		return localSource(target, *f.root)
	}
	loc, err := v1beta1.ParseStorageURI(target)
	if err != nil {
		return nil, err
	}
	switch loc.Scheme {
	case v1beta1.SchemeHF:
		token, err := hubToken(*f.tokenFile)
		if err != nil {
			return nil, err
		}
		return modelmeta.NewHF(target, modelmeta.HFOptions{Endpoint: *f.hfEndpoint, Token: token})
	case v1beta1.SchemeS3:
		return modelmeta.NewS3(target, modelmeta.S3Options{
			Endpoint: *f.s3Endpoint, Region: *f.s3Region, PathStyle: *f.s3PathStyle,
			Credentials: modelmeta.S3Credentials{
				AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
				SessionToken: os.Getenv("AWS_SESSION_TOKEN"),
			},
		})
	case v1beta1.SchemePVC:
		if *f.root == "" {
			return nil, fmt.Errorf("%s: give --root, the directory where claim %q is mounted", target, loc.ClaimName)
		}
		return modelmeta.NewLocal(*f.root, loc.SubPath, modelmeta.LocalOptions{Describe: target})
	case v1beta1.SchemeLocal:
		return localSource(loc.Path, *f.root)
	}
	return nil, fmt.Errorf("berth cannot read %s:// models' files; state modelFormat, modelArchitecture and modelParameterSize in the model's spec", loc.Scheme)
}

// localSource is the directory dir, confined to root (default: dir itself).
func localSource(dir, root string) (modelmeta.Source, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if root == "" {
		return modelmeta.NewLocal(abs, "", modelmeta.LocalOptions{})
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(absRoot, abs)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, fmt.Errorf("the model directory %s is not inside --root %s", abs, absRoot)
	}
	return modelmeta.NewLocal(absRoot, filepath.ToSlash(rel), modelmeta.LocalOptions{})
}

// hubToken reads the token file, or $HF_TOKEN without one.
func hubToken(file string) (string, error) {
	if file == "" {
		return strings.TrimSpace(os.Getenv("HF_TOKEN")), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("--token-file %s is empty", file)
	}
	return token, nil
}

func printResult(w io.Writer, r modelmeta.InspectResult, format string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return err
		}
	} else {
		b = append(b, '\n')
	}
	_, err = w.Write(b)
	return err
}

// envOr is the first non-empty environment variable of names, else def.
func envOr(def string, names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return def
}

const downloadUsage = `usage: berth model download <uri> <dest> [flags]

Fetches every file of the model into dest (created if missing): KServe's
storage-initializer contract, the model-downloader init container's command.
Files already in dest with the listed size are kept, so a re-run fetches only
what is missing; each file is written under a temporary name, its size (and
for Hub LFS files its sha256) checked, then renamed into place. One line is
printed per file, then a summary. On failure the message names the URI and
the credential used, and the exit code is 1.

The model is one of:
  hf://org/repo[@revision]   also KServe's hf://org/repo:revision. $HF_TOKEN
                             is the token, $HF_ENDPOINT the Hub's base URL
                             (default ` + modelmeta.DefaultHFEndpoint + `)
  s3://bucket/prefix         $AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY and
                             $AWS_SESSION_TOKEN (anonymous without them);
                             $AWS_ENDPOINT_URL (else http(s)://$S3_ENDPOINT,
                             https unless $S3_USE_HTTPS=0) for MinIO and other
                             S3-compatible APIs, addressed path-style
                             (endpoint/bucket/key) unless
                             $S3_USER_VIRTUAL_BUCKET=true; $AWS_REGION or
                             $AWS_DEFAULT_REGION (default us-east-1)

flags:`

type downloadFlags struct {
	fs          *flag.FlagSet
	concurrency *int
	timeout     *time.Duration
}

func newDownloadFlags(stderr io.Writer) *downloadFlags {
	fs := flag.NewFlagSet("berth model download", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, downloadUsage); fs.PrintDefaults() }
	return &downloadFlags{
		fs:          fs,
		concurrency: fs.Int("concurrency", 4, "files fetched at once"),
		timeout:     fs.Duration("timeout", 0, "give up after this long; 0 for never"),
	}
}

func runModelDownload(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newDownloadFlags(stderr)
	inspect := &inspectFlags{fs: f.fs}
	pos, err := inspect.parseInterleaved(args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return fmt.Errorf("want <uri> <dest>, got %d arguments; see berth model -h", len(pos))
	}
	if *f.concurrency < 1 {
		return fmt.Errorf("-concurrency %d: want at least 1", *f.concurrency)
	}
	if *f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *f.timeout)
		defer cancel()
	}
	uri, dest := pos[0], pos[1]
	src, cred, err := downloadSource(uri)
	if err != nil {
		return fmt.Errorf("berth model download %s: %w", uri, err)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return fmt.Errorf("berth model download %s: %w", uri, err)
	}
	start := time.Now()
	sum, err := modelmeta.Download(ctx, src, dest, modelmeta.DownloadOptions{Concurrency: *f.concurrency, Progress: stdout})
	if err != nil {
		return downloadError(uri, cred, err)
	}
	fmt.Fprintf(stdout, "downloaded %s to %s: %d files, %d bytes; fetched %d (%d bytes), %d already present; %s\n",
		src.Describe(), dest, sum.Files, sum.Bytes, sum.Fetched, sum.FetchedBytes, sum.Skipped, time.Since(start).Round(time.Millisecond))
	return nil
}

// downloadError names the URI and the credential used on a refusal.
func downloadError(uri, cred string, err error) error {
	switch modelmeta.ReasonOf(err) {
	case modelmeta.ReasonUnauthorized, modelmeta.ReasonNotFound:
		return fmt.Errorf("berth model download %s (credential: %s): %w", uri, cred, err)
	}
	return fmt.Errorf("berth model download %s: %w", uri, err)
}

// downloadSource builds the source of uri from the environment, and says
// which credential it uses (never its secret part).
func downloadSource(uri string) (modelmeta.Source, string, error) {
	client := &http.Client{} // no overall timeout: files may take hours
	switch {
	case strings.HasPrefix(uri, "hf://"):
		target := kserveRevision(uri)
		token := strings.TrimSpace(os.Getenv("HF_TOKEN"))
		cred := "none ($HF_TOKEN is not set)"
		if token != "" {
			cred = "the token in $HF_TOKEN"
		}
		src, err := modelmeta.NewHF(target, modelmeta.HFOptions{Endpoint: strings.TrimSpace(os.Getenv("HF_ENDPOINT")), Token: token, Client: client})
		return src, cred, err
	case strings.HasPrefix(uri, "s3://"):
		o := s3EnvOptions()
		o.Client = client
		cred := "none (anonymous: $AWS_ACCESS_KEY_ID is not set)"
		if o.Credentials.AccessKeyID != "" {
			cred = "access key " + o.Credentials.AccessKeyID + " from $AWS_ACCESS_KEY_ID"
		}
		src, err := modelmeta.NewS3(uri, o)
		return src, cred, err
	}
	return nil, "", errors.New("berth's downloader reads hf:// and s3:// models; for other schemes set the webhook's --model-downloader-image to a downloader that reads them")
}

// kserveRevision turns KServe's hf://org/repo:revision into berth's
// hf://org/repo@revision.
func kserveRevision(uri string) string {
	rest := strings.TrimPrefix(uri, "hf://")
	if strings.Contains(rest, "@") {
		return uri
	}
	i := strings.LastIndex(rest, "/")
	if j := strings.LastIndex(rest, ":"); j > i && i >= 0 {
		return "hf://" + rest[:j] + "@" + rest[j+1:]
	}
	return uri
}

// s3EnvOptions reads the variables KServe's storage initializer reads.
func s3EnvOptions() modelmeta.S3Options {
	o := modelmeta.S3Options{
		Endpoint: strings.TrimSpace(os.Getenv("AWS_ENDPOINT_URL")),
		Region:   envOr("", "AWS_REGION", "AWS_DEFAULT_REGION"),
		Credentials: modelmeta.S3Credentials{
			AccessKeyID:     strings.TrimSpace(os.Getenv("AWS_ACCESS_KEY_ID")),
			SecretAccessKey: strings.TrimSpace(os.Getenv("AWS_SECRET_ACCESS_KEY")),
			SessionToken:    strings.TrimSpace(os.Getenv("AWS_SESSION_TOKEN")),
		},
	}
	if o.Endpoint == "" {
		if host := strings.TrimSpace(os.Getenv("S3_ENDPOINT")); host != "" {
			scheme := "https://"
			if os.Getenv("S3_USE_HTTPS") == "0" {
				scheme = "http://"
			}
			o.Endpoint = scheme + host
		}
	}
	o.PathStyle = o.Endpoint != "" && !strings.EqualFold(strings.TrimSpace(os.Getenv("S3_USER_VIRTUAL_BUCKET")), "true")
	return o
}
