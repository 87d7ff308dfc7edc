// karpenter-dra: Karpenter's KWOK provider whose instance types also declare the DRA devices their
// nodes will publish, read from DRA_SLICES_FILE_PATH (instance type name -> ResourceSlice specs). The
// stock provider declares none, so Karpenter cannot place a claim on a node it has not made yet
// (docs/growth.md, "DRA pools"); a cloud provider that knew our driver would declare them this way.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"unique"

	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/node/health"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"
)

// template turns a published slice's spec into the in-memory form Karpenter simulates.
func template(spec resourcev1.ResourceSliceSpec) *cloudprovider.ResourceSliceTemplate {
	t := &cloudprovider.ResourceSliceTemplate{
		Driver: unique.Make(spec.Driver),
		Pool:   cloudprovider.ResourcePool{Name: unique.Make(spec.Pool.Name)},
	}
	for _, d := range spec.Devices {
		t.Devices = append(t.Devices, cloudprovider.Device{
			Name:                     unique.Make(d.Name),
			Attributes:               d.Attributes,
			Capacity:                 d.Capacity,
			AllowMultipleAllocations: d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations,
			ConsumesCounters:         d.ConsumesCounters,
		})
	}
	return t
}

// declareDevices adds the file's slices to the instance types it names.
func declareDevices(its []*cloudprovider.InstanceType, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	byType := map[string][]resourcev1.ResourceSliceSpec{}
	if err := json.Unmarshal(raw, &byType); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, it := range its {
		for _, spec := range byType[it.Name] {
			it.DynamicResources.ResourceSliceTemplates = append(it.DynamicResources.ResourceSliceTemplates, template(spec))
		}
	}
	return nil
}

func main() {
	ctx, op := operator.NewOperator()
	instanceTypes, err := kwok.ConstructInstanceTypes(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "failed constructing instance types")
	}
	if path := os.Getenv("DRA_SLICES_FILE_PATH"); path != "" {
		if err := declareDevices(instanceTypes, path); err != nil {
			log.FromContext(ctx).Error(err, "failed reading the instance types' DRA devices")
			os.Exit(1)
		}
	}
	run(ctx, op, instanceTypes)
}

func run(ctx context.Context, op *operator.Operator, instanceTypes []*cloudprovider.InstanceType) {
	provider := kwok.NewCloudProvider(ctx, op.GetClient(), instanceTypes)
	decorated := overlay.Decorate(provider, op.GetClient(), op.InstanceTypeStore)
	repairs, err := health.NewRepairPolicyMatcher(ctx, decorated)
	if err != nil {
		log.FromContext(ctx).Error(err, "failed matching repair policies")
		os.Exit(1)
	}
	cluster := state.NewCluster(op.Clock, op.GetClient(), decorated, state.WithRepairPolicyMatcher(repairs))
	op.WithControllers(ctx, controllers.NewControllers(ctx, op.Manager, op.Clock, op.GetClient(), op.EventRecorder,
		decorated, provider, cluster, op.InstanceTypeStore, op.PredictionStore)...).Start(ctx)
}
