/** The VolumeSnapshot kind's one face (kinds/registry.ts reads it; nothing else reaches into the folder). */
export { volumeSnapshot } from './adapter.ts';
