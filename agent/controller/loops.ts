import { UsageError } from '../errors.ts';

/** Which of the controller's loops run in this process. */
export interface Loops {
  /** The resource loop: OpenStack resources of opted-in namespaces, through the cloud's APIs. */
  resources: boolean;
  syncs: boolean;
  cloudLifecycle: boolean;
}

/** What the command line gave the controller. */
export interface LoopsGiven {
  cloudName?: string;
  syncs: boolean;
  cloudLifecycle: boolean;
}

/**
 * The resource loop needs a cloud (a clouds.yaml entry); the cloud lifecycle does not: it
 * installs the cloud, so it cannot need one to exist already. Without a cloud the
 * controller drives OpenStackCloud (and Syncs, which may carry it from Git) and leaves
 * the resource kinds alone. With neither a cloud nor the lifecycle it would do nothing
 * OpenStack at all: that is a usage error naming both ways out.
 */
export function chooseLoops(given: LoopsGiven): Loops {
  if (given.cloudName) return { resources: true, syncs: given.syncs, cloudLifecycle: given.cloudLifecycle };
  if (!given.cloudLifecycle) {
    throw new UsageError(
      'no cloud given: pass --cloud NAME (an entry of clouds.yaml), set OS_CLOUD, or set "cloud" in the config file; ' +
        'without a cloud the controller only drives OpenStackCloud, which --no-cloud-lifecycle turns off',
    );
  }
  return { resources: false, syncs: given.syncs, cloudLifecycle: true };
}
