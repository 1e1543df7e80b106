export { uuid5 } from '../util/uuid5.ts';
