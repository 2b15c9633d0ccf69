// Package promtext reads what the load tools measure of a component from
// its /metrics: the Prometheus text exposition format (version 0.0.4,
// what client_golang and every Kubernetes component serve), parsed by
// the upstream parser, github.com/prometheus/common/expfmt.
//
// The rules:
//
//   - Parse is expfmt's TextParser with UTF-8 name validation (the
//     quoted names of the format's newer form are read too). A histogram's
//     _bucket, _sum and _count lines form one family under the histogram's
//     own name when its TYPE line comes first, as exporters write it;
//     without one they are untyped families of their own names.
//   - Malformed text is an error and no families, never part of a scrape:
//     an expfmt.ParseError, which names the line and what is wrong with it
//     ("text format parsing error in line 3: expected float as value, got
//     \"x\""). A reader that fails returns its own error.
//   - Series are picked by their parsed labels, never by the text of a
//     line: a Labels pair matches the label of exactly that name whose
//     value, unescaped, is exactly that value. name="x" is not matched by
//     webhook_name="x", nor by a value holding a comma, a quote (\") or a
//     brace; a timestamp after the value is not the value. Labels not
//     named are not looked at; a pair with the value "" matches a series
//     without the label, as in Prometheus.
//   - Histogram, Series and Value sum or list the series that match. A
//     family that is absent has no series and reads as zero (a labelled
//     metric has none until its first observation); a family of another
//     type is an error that names both types.
//   - Scrape GETs a /metrics URL asking for the text format; an answer
//     other than 200 OK is an error with its status and the start of its
//     body, and the errors of Parse name the URL. ScrapeAPIServer is the
//     same through a client of the API server (which authenticates as the
//     client does); APIServerWebhookDuration names the API server's
//     histogram of its calls to admission webhooks, labelled by webhook.
package promtext
