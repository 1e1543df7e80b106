// Fixture: the standalone server imports the controller.
import { controller } from '../controller/resources/controller.ts';

export const server = controller + 1;
