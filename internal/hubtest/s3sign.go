package hubtest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// verifySigV4 checks r's AWS Signature Version 4 (header form) against the
// server's credentials, rebuilding the canonical request from what arrived
// on the wire, independently of modelmeta's signer. It returns S3's error
// code and message, or "" when the signature verifies.
func verifySigV4(r *http.Request) (code, msg string) {
	authz := r.Header.Get("Authorization")
	const algo = "AWS4-HMAC-SHA256 "
	if !strings.HasPrefix(authz, algo) {
		return "AccessDenied", "Access Denied: the request is not signed with AWS4-HMAC-SHA256"
	}
	fields := map[string]string{}
	for _, part := range strings.Split(strings.TrimPrefix(authz, algo), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[0] != S3AccessKeyID {
		return "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records."
	}
	if scope[2] != S3Region || scope[3] != "s3" || scope[4] != "aws4_request" {
		return "AuthorizationHeaderMalformed", "the credential scope must be <date>/" + S3Region + "/s3/aws4_request"
	}
	amzDate := r.Header.Get("X-Amz-Date")
	at, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil || !strings.HasPrefix(amzDate, scope[1]) || time.Since(at).Abs() > 15*time.Minute {
		return "RequestTimeTooSkewed", "X-Amz-Date is missing, not the scope's day, or more than 15 minutes off"
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		return "AccessDenied", "X-Amz-Content-Sha256 is missing"
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	var hdrs strings.Builder
	for _, h := range signed {
		v := strings.Join(r.Header.Values(h), ",")
		if h == "host" {
			v = r.Host
		}
		hdrs.WriteString(h + ":" + strings.Join(strings.Fields(v), " ") + "\n")
	}
	creq := strings.Join([]string{r.Method, wirePath(r), sortedQuery(r.URL.RawQuery), hdrs.String(), fields["SignedHeaders"], payload}, "\n")
	sts := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + strings.Join(scope[1:], "/") + "\n" + hexSum(creq)
	key := []byte("AWS4" + S3SecretAccessKey)
	for _, p := range scope[1:] {
		key = mac(key, p)
	}
	if !hmac.Equal([]byte(hex.EncodeToString(mac(key, sts))), []byte(fields["Signature"])) {
		return "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided."
	}
	return "", ""
}

// wirePath is the path as sent, which S3 signs without re-encoding.
func wirePath(r *http.Request) string {
	if p, _, _ := strings.Cut(r.RequestURI, "?"); strings.HasPrefix(p, "/") {
		return p
	}
	return r.URL.EscapedPath()
}

// sortedQuery is the canonical query: pairs sorted, each part encoded as
// SigV4 wants (unreserved characters kept, everything else %XX).
func sortedQuery(raw string) string {
	if raw == "" {
		return ""
	}
	var pairs []string
	for _, kv := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(kv, "=")
		k, _ = url.QueryUnescape(k)
		v, _ = url.QueryUnescape(v)
		pairs = append(pairs, awsEncode(k)+"="+awsEncode(v))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

func awsEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(hex.EncodeToString([]byte{c})))
		}
	}
	return b.String()
}

func mac(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

func hexSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
