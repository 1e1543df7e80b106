import { Command } from 'commander';
import { imageExportCommand } from './image-export.ts';
import { imageImportCommand } from './image-import.ts';
import { imageInspectCommand } from './image-inspect.ts';
import { imagePromoteCommand } from './image-promote.ts';
import { imagePushCommand } from './image-push.ts';

/**
 * `kupenstack image …`: VM disks in OCI registries, one file per
 * subcommand: `push` publishes a disk file as our disk artifact, `inspect`
 * shows what a reference resolves to, `import` streams one into Glance,
 * `export` streams a Glance image back out to a registry, `promote` copies
 * a digest with its signatures and attestations to another registry.
 */
export function imageCommand(): Command {
  const cmd = new Command('image').description(
    'VM disk images in OCI registries: push, inspect, import into Glance, export from Glance, promote between registries',
  );
  cmd.addCommand(imagePushCommand());
  cmd.addCommand(imageInspectCommand());
  cmd.addCommand(imageImportCommand());
  cmd.addCommand(imageExportCommand());
  cmd.addCommand(imagePromoteCommand());
  return cmd;
}
