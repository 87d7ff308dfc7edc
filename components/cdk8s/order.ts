import { Chart } from 'cdk8s';
import { IConstruct } from 'constructs';

/**
 * Apply order inside a chart: the objects of a TensorFusionController (namespace, CRDs, webhook)
 * come before our custom resources and GPU workloads whatever the order they were declared in,
 * so one `kubectl apply -f` of the chart finds the CRDs and a served webhook. cdk8s orders a chart by
 * construct dependencies, which must be added before synthesis: each side adds them when it is
 * created, against whatever of the other side already exists. Across charts the user orders the
 * charts (as cdk8s does: `platform.addDependency(controllerChart)`), which renames the output files.
 */
interface ChartOrder {
  controllers: IConstruct[];
  dependents: Set<IConstruct>;
}
const orders = new WeakMap<Chart, ChartOrder>();

function orderOf(construct: IConstruct): ChartOrder {
  const chart = Chart.of(construct);
  let order = orders.get(chart);
  if (!order) orders.set(chart, (order = { controllers: [], dependents: new Set() }));
  return order;
}

/** Makes `dependent` synthesize after every TensorFusionController of its chart, present or future. */
export function dependOnController(dependent: IConstruct): void {
  const order = orderOf(dependent);
  if (order.dependents.has(dependent)) return;
  order.dependents.add(dependent);
  for (const controller of order.controllers) dependent.node.addDependency(controller);
}

/** Records a TensorFusionController: every dependent of its chart synthesizes after it. */
export function registerController(controller: IConstruct): void {
  const order = orderOf(controller);
  order.controllers.push(controller);
  for (const dependent of order.dependents) dependent.node.addDependency(controller);
}
