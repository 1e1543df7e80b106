import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from './paths.ts';

interface PackageJson {
  version: string;
}

export const version: string = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as PackageJson).version;
