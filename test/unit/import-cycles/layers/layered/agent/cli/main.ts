// Fixture: the command line over both front ends, and the Sync client beside its commands.
import { agent } from '../standalone/agent.ts';
import { controller } from '../controller/process.ts';
import { client } from './cluster/sync-client.ts';

export const main = agent + controller + client;
