import { Command } from 'commander';
import { pushManifestsCommand } from './push-manifests.ts';

/** `kupenstack push …`: publish to an OCI registry; `manifests` is the one thing pushed this way (disks: `image push`). */
export function pushCommand(): Command {
  const cmd = new Command('push').description('publish to an OCI registry: a folder of manifests as the artifact a Sync (or Flux) pulls');
  cmd.addCommand(pushManifestsCommand());
  return cmd;
}
