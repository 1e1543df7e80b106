/**
 * The OpenStackCloudConnection kind's one face: the namespace label that picks a connection, where a
 * connection's clouds.yaml comes from, and the error of a cloud that is down. Its loop (watch, probe,
 * status) is the in-cluster controller's (controller/clouds/connections.ts): it has no adapter.
 */
export { cloudLabel, connectionOf } from './label.ts';
export { sourceOf, type ConnectionSource, type InstalledCloudsSecret } from './source.ts';
export { CloudUnreachableError, type DownReason } from './errors.ts';
