// Package images builds berth's container images without a Docker
// daemon (go-containerregistry), writes them as docker-archive tarballs
// that `ctr images import` and `kind load image-archive` read, and pushes
// them to a registry.
//
// Rules:
//   - Two layers: a minimal base (root and nonroot users, nsswitch.conf,
//     /tmp, the CA certificates of the pinned golang.org/x/crypto/x509roots
//     module, PEM at /etc/ssl/certs/ca-certificates.crt) and the image's own
//     files. No shell, no package manager.
//   - The container runs as nonroot (65532:65532) from /.
//   - Reproducible: the same files, entrypoint, labels and epoch give the
//     same digest. Tar entries are sorted, owned by root, with fixed modes
//     and the epoch as their time; the config's created time is the epoch
//     (`make images` passes SOURCE_DATE_EPOCH, by default the last commit's
//     time). Files that are the same program under several names are
//     symlinks to one copy.
//   - Images (images.go) is the one list of images: the Makefile builds
//     the commands it names (hack/images binaries), and deploy's tests
//     require every berth image a manifest or default names to be in it.
//   - Labels follow the OCI annotations: org.opencontainers.image.source,
//     .revision, .version, .title, .description (no .licenses: the
//     repository states no licence yet).
package images
