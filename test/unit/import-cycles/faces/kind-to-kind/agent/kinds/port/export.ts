// Fixture: one kind reaches into another kind's file.
import { isDefaultGroup } from '../securitygroup/export.ts';

export const portExport = isDefaultGroup + 1;
