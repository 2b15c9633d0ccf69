package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/modelmeta"
	"github.com/berthdev/berth/reconcile/plan"
)

// The inspector Job of a pvc:// model.
const (
	// InspectMountPath is where the whole claim is mounted, read-only.
	InspectMountPath = "/mnt/models"
	// InspectTerminationPath receives the JSON result.
	InspectTerminationPath = "/dev/termination-log"
	// LabelInspectModel marks inspector Jobs and their pods.
	LabelInspectModel = "ome.io/model-inspector"
	// inspectPoll is how soon a running Job is looked at again.
	inspectPoll = 3 * time.Second
	// inspectTTL deletes a finished Job the reconciler did not.
	inspectTTL = int32(600)
)

// inspectJobName is deterministic per model identity, generation and
// storage URI: a new generation runs a new Job, a retry of the same one
// finds it.
func inspectJobName(m *model) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%s/%s/%d/%s", m.kind, m.namespace, m.name, m.uid, m.generation, storageURIOf(m.spec)))
	return "berth-inspect-" + hex.EncodeToString(sum[:])[:12]
}

func storageURIOf(spec v1beta1.BaseModelSpec) string {
	if spec.Storage == nil || spec.Storage.StorageURI == nil {
		return ""
	}
	return *spec.Storage.StorageURI
}

// inspectNamespace is where a model's inspector Job runs: the claim's
// namespace when the URI names one (pvc://<namespace>:<claim>/<path>; a
// pod mounts only claims of its own namespace), else the model's
// credentials namespace.
func inspectNamespace(credentials string, loc v1beta1.StorageLocation) string {
	if loc.ClaimNamespace != "" {
		return loc.ClaimNamespace
	}
	return credentials
}

// inspect runs the model's inspector Job and reads its result: Inspecting
// (with how soon to look again) while it runs; the metadata, or the
// failure its termination message reports, once it ended. A finished Job
// is deleted after it is read, so a retry runs a new one.
func (c *Controller) inspect(ctx context.Context, m *model, loc v1beta1.StorageLocation) (plan.ModelOutcome, time.Duration, error) {
	ns, name := inspectNamespace(c.credentialsNamespace(m), loc), inspectJobName(m)
	jobs := c.kube.BatchV1().Jobs(ns)
	job, err := jobs.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.opts.Writes("create", "jobs")
		_, err = jobs.Create(ctx, c.inspectJob(m, loc, ns, name), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
				return plan.ModelOutcome{Reason: plan.ReasonInspectFailed, Message: fmt.Sprintf(
					"%s: cannot create inspector Job %s/%s: %v", m.ref(), ns, name, err)}, 0, nil
			}
			return plan.ModelOutcome{}, 0, err
		}
		return inspecting(m, ns, name), inspectPoll, nil
	case err != nil:
		return plan.ModelOutcome{}, 0, err
	case job.DeletionTimestamp != nil:
		return inspecting(m, ns, name), inspectPoll, nil
	}
	done, failed := jobFinished(job)
	if !done {
		return inspecting(m, ns, name), inspectPoll, nil
	}
	out := c.inspectResult(ctx, m, ns, name, failed)
	bg := metav1.DeletePropagationBackground
	c.opts.Writes("delete", "jobs")
	if err := jobs.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
		c.log.Info("could not delete a finished inspector Job; its TTL will", "job", ns+"/"+name, "err", err)
	}
	return out, 0, nil
}

func inspecting(m *model, ns, name string) plan.ModelOutcome {
	return plan.ModelOutcome{Reason: plan.ReasonInspecting, Message: fmt.Sprintf(
		"%s: Job %s/%s reads the model's files from its claim", m.ref(), ns, name)}
}

func jobFinished(job *batchv1.Job) (done, failed bool) {
	for _, cond := range job.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete:
			return true, false
		case batchv1.JobFailed:
			return true, true
		}
	}
	return false, false
}

// inspectResult reads the termination message of the Job's pod.
func (c *Controller) inspectResult(ctx context.Context, m *model, ns, name string, failed bool) plan.ModelOutcome {
	pods, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{"job-name": name}).String()})
	var msg, why string
	if err != nil {
		why = "listing its pods: " + err.Error()
	}
	if err == nil {
		msg, why = terminationMessage(pods.Items)
	}
	if msg == "" {
		state := "succeeded"
		if failed {
			state = "failed"
		}
		return plan.ModelOutcome{Reason: plan.ReasonInspectFailed, Message: fmt.Sprintf(
			"%s: inspector Job %s/%s %s without a result (%s); check that the claim exists and the image runs `berth model inspect`", m.ref(), ns, name, state, why)}
	}
	return parseInspectResult(msg)
}

// terminationMessage is the first inspector container's termination
// message among the pods, newest first.
func terminationMessage(pods []corev1.Pod) (msg, why string) {
	why = "no pod ran"
	var newest *corev1.Pod
	for i := range pods {
		if newest == nil || pods[i].CreationTimestamp.After(newest.CreationTimestamp.Time) {
			newest = &pods[i]
		}
	}
	if newest == nil {
		return "", why
	}
	for _, cs := range newest.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			if strings.TrimSpace(t.Message) != "" {
				return t.Message, ""
			}
			return "", fmt.Sprintf("pod %s exited %d (%s) with an empty termination message", newest.Name, t.ExitCode, t.Reason)
		}
	}
	return "", fmt.Sprintf("pod %s has not terminated", newest.Name)
}

// inspectJob is the Job that mounts the whole claim read-only at
// /mnt/models and runs `berth model inspect pvc://claim/sub --root
// /mnt/models` (modelmeta.InspectJobArgs: reads are confined to the claim,
// and the result names the pvc:// URI): no service account token,
// non-root, read-only root, no capabilities, a deadline, and a TTL.
func (c *Controller) inspectJob(m *model, loc v1beta1.StorageLocation, ns, name string) *batchv1.Job {
	never, no, yes := int32(0), false, true
	user := int64(65532)
	deadline := int64(c.opts.DiscoveryTimeout / time.Second)
	if deadline < 1 {
		deadline = 1
	}
	ttl := inspectTTL
	lbl := map[string]string{LabelInspectModel: "true", "app.kubernetes.io/managed-by": "berth-reconciler"}
	owner := metav1.OwnerReference{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: m.kind, Name: m.name, UID: types.UID(m.uid)}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbl, OwnerReferences: []metav1.OwnerReference{owner},
			Annotations: map[string]string{"ome.io/model": strings.TrimPrefix(m.ref(), m.kind+" "), "ome.io/model-kind": m.kind}},
		Spec: batchv1.JobSpec{
			BackoffLimit: &never, ActiveDeadlineSeconds: &deadline, TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: &no,
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &user, RunAsGroup: &user,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name:                     "inspect",
						Image:                    c.opts.InspectorImage,
						Args:                     modelmeta.InspectJobArgs(storageURIOf(m.spec), InspectMountPath, InspectTerminationPath),
						TerminationMessagePath:   InspectTerminationPath,
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						VolumeMounts:             []corev1.VolumeMount{{Name: "model", MountPath: InspectMountPath, ReadOnly: true}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
						},
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					}},
					Volumes: []corev1.Volume{{Name: "model", VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: loc.ClaimName, ReadOnly: true}}}},
				},
			},
		},
	}
}

// parseInspectResult turns a termination message (modelmeta.InspectResult,
// the contract of `berth model inspect`) into an outcome; anything else (a
// crash's log tail) is InspectFailed, quoting it.
func parseInspectResult(msg string) plan.ModelOutcome {
	r, err := modelmeta.ParseInspectResult([]byte(msg))
	if err != nil {
		const maxQuote = 512
		if len(msg) > maxQuote {
			msg = msg[:maxQuote] + "..."
		}
		return plan.ModelOutcome{Reason: plan.ReasonInspectFailed, Message: fmt.Sprintf("%v: %q", err, msg)}
	}
	if e := r.Err(); e != nil {
		return failure(string(e.Reason), e)
	}
	return plan.ModelOutcome{Metadata: r.Metadata}
}
