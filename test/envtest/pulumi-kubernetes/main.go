// The Kubernetes provider's plugin binary, built for the real-engine tests (npm run envtest:setup).
// Upstream's main package (cmd/pulumi-resource-kubernetes) embeds schema-embed.json and
// terraform-mapping-embed.json, which its `go generate` writes and its module zip lacks. This main
// does the same with files the setup writes beside it from the module's own schema.json and
// terraform-mapping.json (the schema's version set, both minified): they are not committed.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
