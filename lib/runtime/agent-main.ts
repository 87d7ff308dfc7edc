/**
 * Process entry of the node agent, bundled on its own (build/controller/agent.js) so that the node
 * side ships only what it runs and the controller's bundle carries no agent code.
 */
import { runAgent } from './agent/main';

if (require.main === module) {
  runAgent().catch((err) => {
    // eslint-disable-next-line no-console
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
