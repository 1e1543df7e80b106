import { Option, type Command } from 'commander';
import { configureGlanceDiskFormat, glanceDiskFormats, type GlanceDiskFormat } from '../glance/raw-target.ts';

/** `--glance-disk-format`: how OCI disks land in Glance (agent/glance/raw-target.ts), shared by agent, controller, apply and image import. */
export interface GlanceOptions {
  glanceDiskFormat: GlanceDiskFormat;
}

export function withGlanceOptions(cmd: Command): Command {
  return cmd.addOption(glanceDiskFormatOption());
}

export function glanceDiskFormatOption(): Option {
  return new Option(
    '--glance-disk-format <how>',
    "how OCI disks land in Glance: raw converts qcow2/vmdk/vhd(x)/vdi through Glance's interoperable import (glance-direct with its image_conversion plugin), " +
      'as Ceph RBD wants; keep uploads them as pushed (PUT /file); auto is raw where Glance shows an rbd store (/v2/info/stores/detail, admin only), else keep',
  )
    .choices(glanceDiskFormats)
    .default('auto');
}

/** Sets the process's choice; returns the line to log. */
export function configureGlanceFrom(o: GlanceOptions): string {
  configureGlanceDiskFormat(o.glanceDiskFormat);
  return `glance: disks land ${o.glanceDiskFormat === 'keep' ? 'as pushed' : o.glanceDiskFormat === 'raw' ? 'raw' : 'raw where Glance stores on Ceph RBD, else as pushed'} (--glance-disk-format ${o.glanceDiskFormat})`;
}
