import { KupenstackError } from '../errors.ts';

/** A chart could not be fetched, verified or rendered: the message names the chart, the source and the fix. */
export class ChartError extends KupenstackError {
  readonly chart: string;

  constructor(code: string, chart: string, message: string, options?: { cause?: unknown }) {
    super(code, `chart ${chart}: ${message}`, options);
    this.chart = chart;
  }
}
