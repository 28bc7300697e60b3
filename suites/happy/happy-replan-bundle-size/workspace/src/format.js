import moment from 'moment';

export const day = (ts) => moment(ts).format('YYYY-MM-DD');
export const ago = (ts) => moment(ts).fromNow();
