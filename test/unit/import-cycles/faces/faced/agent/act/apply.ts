// Fixture: the engine reads the kinds through the registry and the kit.
import { adapters } from '../kinds/registry.ts';
import { adapter } from '../kinds/kit/adapter.ts';

export const apply = adapters + adapter;
