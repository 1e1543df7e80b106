// Fixture: the command line over both front ends.
import { agent } from '../standalone/agent.ts';
import { controller } from '../controller/controller.ts';

export const main = agent + controller;
