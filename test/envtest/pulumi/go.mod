// Builds the Pulumi CLI (the engine) for the real-engine tests (npm run envtest:setup), at the version
// of the npm @pulumi/pulumi the tests use. The replace is copied from pulumi's pkg/go.mod: replaces
// apply only in the main module, and the CLI does not build without it.
module tensor-fusion-iac.local/envtest/pulumi

go 1.26.0

replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e

require github.com/pulumi/pulumi/pkg/v3 v3.248.0 // indirect
