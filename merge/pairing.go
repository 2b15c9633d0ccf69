package merge

import (
	"crypto/sha256"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

// PairingVersion names the pairing algorithm, as RevisionVersion does the
// revision's: a change rolls every prefill/decode service.
const PairingVersion = "berth.pairing/v1"

// Pairing is the pairing of a prefill/decode service whose engine runs
// revision engineRev and whose decoder runs decoderRev: what both compose
// from, so a change to either is a new pairing. It is the first 16 hex
// digits of sha256 over the version and both revisions, a valid label
// value. A router pairs a prefill only with a decode of the same pairing
// (label v1beta1.LabelPairing on both).
func Pairing(engineRev, decoderRev string) string {
	sum := sha256.Sum256([]byte(PairingVersion + "\x00" + engineRev + "\x00" + decoderRev))
	return hex.EncodeToString(sum[:8])
}

// markPairing stamps the pairing label; "" leaves the pod as it is.
func markPairing(pod *corev1.Pod, pairing string) {
	if pairing == "" {
		return
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[v1beta1.LabelPairing] = pairing
}
