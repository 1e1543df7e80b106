// Fixture: an in-cluster file imports the standalone agent.
import { agent } from '../../standalone/agent.ts';

export const hooks = agent + 1;
