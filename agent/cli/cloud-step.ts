import type { Command } from 'commander';

/** The --kubeconfig and --cloud-namespace flags of apply, plan and agent (the cloud itself: ../standalone/revision-cloud.ts). */
export function withCloudStepOptions(command: Command): Command {
  return command
    .option(
      '--kubeconfig <file>',
      'drive the OpenStackCloud the revision declares in this Kubernetes cluster (OpenStack-Helm charts) before its OpenStack resources',
    )
    .option('--cloud-namespace <ns>', "with --kubeconfig: the namespace of the cloud's charts (default: the spec's namespace, else openstack)");
}
