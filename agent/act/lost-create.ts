import { OpenStackError } from '../openstack/errors.ts';

/**
 * The request may still be running in the service: no answer within the timeout, or a gateway's
 * 502/504 in its place. A connection the service closed or a cut body mean it is done with the
 * request: then a lookup that finds nothing is authoritative and the create may be sent again.
 */
export function answerLost(err: OpenStackError): boolean {
  return err.timedOut || err.status === 502 || err.status === 504;
}

/** A create whose answer was lost and whose object is not (yet) there: the next run looks again before creating. */
export class LostCreate extends OpenStackError {
  constructor(err: OpenStackError) {
    super(
      {
        status: err.status,
        service: err.service,
        method: err.method,
        path: err.path,
        requestId: err.requestId,
        detail: `${err.detail}; the create may still be in progress in the service, so it is not sent again in this run: the next run adopts the object or creates it`,
      },
      { cause: err },
    );
  }
}
